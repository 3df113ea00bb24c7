"""A fake OpenAI- and Anthropic-compatible API for the LLM clients' test
(tests/clients/llm_clients_test.py): Python's http.server, standard library only.

Usage: llm_upstream.py LEDGER
Listens on 127.0.0.1 on a port the system picks and prints that port on its first line.

- POST /v1/chat/completions: OpenAI chat completions, a JSON body, or with `"stream": true` an
  event stream of chunks carrying `"usage": null`, then (only when `stream_options.include_usage`
  is asked) the chunk with the usage, then `data: [DONE]`.
- POST /v1/responses: OpenAI's responses API, a JSON body, or a stream of `response.*` events
  that ends with `response.completed` and its `response.usage`.
- POST /v1/messages: Anthropic messages, a JSON body, or a stream: `message_start` with the
  input's usage, the content, `message_delta`s with cumulative usage, `message_stop`.

The usage follows from the request, so the test knows each call's cost: input tokens are
3 + the prompt's length in characters, output tokens are the request's `max_tokens`
(`max_output_tokens` for the responses API). A model whose name contains "cached" (Anthropic)
also reports 13 cache-creation and 21 cache-read input tokens. A model whose name contains "cut"
makes a stream stop half-way, before its usage (for Anthropic: after `message_start`, whose usage
counts 1 output token), by closing the connection without the chunked body's last chunk.

Streams are written in chunks of 23 bytes, each flushed on its own, so that events (and UTF-8
characters of the reply) are cut across the pieces the proxy reads.

Every call appends one JSON line to LEDGER before its body is sent: the API, whether it streamed
or was cut, the usage it reports and what it costs as a total, and the reply's text.
"""
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = 23
# The reply: ASCII, two- three- and four-byte UTF-8 characters, an escaped newline and quote,
# and text that looks like an event stream's syntax inside the JSON strings.
WORDS = ["Héllo", "wörld", "→", "data: [DONE]", "🙂", "event: x", "\n\n", '"quoted"', "end."]
CACHE_CREATION = 13
CACHE_READ = 21

ledger_path = sys.argv[1]
ledger_lock = threading.Lock()


def reply_text(prompt):
    return f"Reply to {prompt}: " + " ".join(WORDS)


def pieces(text, count=6):
    """The reply cut into `count` deltas (by characters)."""
    size = max(1, -(-len(text) // count))
    return [text[i:i + size] for i in range(0, len(text), size)]


def prompt_of(body, api):
    if api == "responses":
        given = body.get("input", "")
        if isinstance(given, str):
            return given
        return "".join(part.get("content", "") for part in given if isinstance(part, dict))
    text = ""
    for message in body.get("messages", []):
        content = message.get("content", "")
        if isinstance(content, str):
            text += content
        else:
            text += "".join(block.get("text", "") for block in content)
    return text


class Api(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # Each chunk in a segment of its own.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?")[0]
        api = {"/v1/chat/completions": "chat", "/v1/responses": "responses",
               "/v1/messages": "messages"}.get(path)
        if api is None:
            self.send_bytes(404, "application/json", b'{"error":"no such API"}')
            return
        model = body.get("model", "")
        prompt = prompt_of(body, api)
        stream = bool(body.get("stream"))
        cut = stream and "cut" in model
        text = reply_text(prompt)
        input_tokens = 3 + len(prompt)
        output_tokens = int(body.get("max_output_tokens" if api == "responses" else "max_tokens",
                                     16))
        cached = api == "messages" and "cached" in model
        usage_said = True
        if api == "chat":
            usage = {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                     "total_tokens": input_tokens + output_tokens,
                     "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                     "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}}
            total = usage["total_tokens"]
            usage_said = not stream or bool((body.get("stream_options") or {}).get("include_usage"))
        elif api == "responses":
            usage = {"input_tokens": input_tokens,
                     "input_tokens_details": {"cached_tokens": 0},
                     "output_tokens": output_tokens,
                     "output_tokens_details": {"reasoning_tokens": 0},
                     "total_tokens": input_tokens + output_tokens}
            total = usage["total_tokens"]
        else:
            usage = {"input_tokens": input_tokens, "output_tokens": output_tokens,
                     "cache_creation_input_tokens": CACHE_CREATION if cached else 0,
                     "cache_read_input_tokens": CACHE_READ if cached else 0}
            total = (input_tokens + usage["cache_creation_input_tokens"] +
                     usage["cache_read_input_tokens"] + output_tokens)
        said = None  # what a cut stream reported before it stopped
        if cut and api == "messages":
            said = total - output_tokens + 1
        self.record({"api": api, "stream": stream, "cut": cut, "model": model,
                     "usage": usage if usage_said and not cut else None, "cost": total,
                     "said_before_cut": said, "text": text})
        if not stream:
            self.send_json(self.json_body(api, model, text, usage))
        else:
            events = getattr(self, api + "_events")(model, text, usage, usage_said)
            self.send_stream(events, cut)

    def record(self, entry):
        with ledger_lock, open(ledger_path, "a") as ledger:
            ledger.write(json.dumps(entry) + "\n")

    # The JSON bodies.

    def json_body(self, api, model, text, usage):
        if api == "chat":
            return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                 "message": {"role": "assistant", "content": text,
                                             "refusal": None}}],
                    "usage": usage, "system_fingerprint": None}
        if api == "responses":
            return self.response_object(model, "completed", text, usage)
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "stop_sequence": None, "usage": usage}

    @staticmethod
    def response_object(model, status, text, usage):
        output = []
        if text is not None:
            output = [{"type": "message", "id": "msg_1", "status": "completed",
                       "role": "assistant",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]}]
        return {"id": "resp_1", "object": "response", "created_at": 1, "status": status,
                "model": model, "output": output, "usage": usage, "error": None,
                "incomplete_details": None, "instructions": None, "metadata": {},
                "parallel_tool_calls": True, "temperature": 1.0, "tool_choice": "auto",
                "tools": [], "top_p": 1.0}

    # The streams: lists of (event name or None, data), the point to cut at marked by "CUT".

    def chat_events(self, model, text, usage, usage_said):
        def chunk(delta, finish=None):
            return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                    "model": model, "system_fingerprint": None,
                    "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                 "finish_reason": finish}],
                    "usage": None}
        parts = pieces(text)
        events = [(None, chunk({"role": "assistant", "content": ""}))]
        events += [(None, chunk({"content": part})) for part in parts[:2]]
        events.append("CUT")
        events += [(None, chunk({"content": part})) for part in parts[2:]]
        events.append((None, chunk({}, "stop")))
        if usage_said:
            events.append((None, {"id": "chatcmpl-1", "object": "chat.completion.chunk",
                                  "created": 1, "model": model, "system_fingerprint": None,
                                  "choices": [], "usage": usage}))
        events.append((None, "[DONE]"))
        return events

    def responses_events(self, model, text, usage, usage_said):
        events = [("response.created", {"type": "response.created", "sequence_number": 0,
                                        "response": self.response_object(model, "in_progress",
                                                                         None, None)})]
        for number, part in enumerate(pieces(text)):
            events.append(("response.output_text.delta",
                           {"type": "response.output_text.delta", "item_id": "msg_1",
                            "output_index": 0, "content_index": 0, "delta": part,
                            "sequence_number": number + 1}))
            if number == 2:
                events.append("CUT")
        events.append(("response.output_text.done",
                       {"type": "response.output_text.done", "item_id": "msg_1",
                        "output_index": 0, "content_index": 0, "text": text,
                        "sequence_number": 90}))
        events.append(("response.completed",
                       {"type": "response.completed", "sequence_number": 91,
                        "response": self.response_object(model, "completed", text, usage)}))
        return events

    def messages_events(self, model, text, usage, usage_said):
        start_usage = dict(usage, output_tokens=1)
        events = [("message_start",
                   {"type": "message_start",
                    "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                "model": model, "content": [], "stop_reason": None,
                                "stop_sequence": None, "usage": start_usage}}),
                  ("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}}),
                  ("ping", {"type": "ping"})]
        for number, part in enumerate(pieces(text)):
            events.append(("content_block_delta",
                           {"type": "content_block_delta", "index": 0,
                            "delta": {"type": "text_delta", "text": part}}))
            if number == 1:
                events.append("CUT")
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        # Cumulative: the last one counts.
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": None, "stop_sequence": None},
                                         "usage": {"output_tokens": usage["output_tokens"] // 2}}))
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": "end_turn",
                                                   "stop_sequence": None},
                                         "usage": {"output_tokens": usage["output_tokens"]}}))
        events.append(("message_stop", {"type": "message_stop"}))
        return events

    # Writing.

    def send_bytes(self, status, content_type, data):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, value):
        self.send_bytes(200, "application/json", json.dumps(value).encode())

    def send_stream(self, events, cut):
        whole = b""
        for event in events:
            if event == "CUT":
                if cut:
                    break
                continue
            name, data = event
            text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            whole += (f"event: {name}\n" if name else "").encode() + f"data: {text}\n\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for start in range(0, len(whole), CHUNK):
            part = whole[start:start + CHUNK]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.flush()
            time.sleep(0.0005)
        if cut:
            # No last chunk: the connection closes in the middle of the body.
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class Server(ThreadingHTTPServer):
    daemon_threads = True


def main():
    server = Server(("127.0.0.1", 0), Api)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
