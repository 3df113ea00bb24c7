#!/usr/bin/env python3
"""Turns llhttp's request fixtures (test/request/*.md of nodejs/llhttp) into llhttp_requests.json:
for each strict case, the raw bytes a client sends and what llhttp made of them (the messages it
completed, with their method, target, fields and body; the error it stopped at). The test
tests/proxy/http/request_corpus_test.cpp sends the bytes through the proxy and compares.

    python3 tests/data/http1/llhttp_to_json.py LLHTTP_CHECKOUT/test/request > \
        tests/data/http1/llhttp_requests.json

The bytes are expanded as llhttp's own test runner (test/md-test.ts) expands them. Cases of the
lenient parser modes are left out: they test options a strict server does not turn on. Each
byte is written as one JSON character (U+0000..U+00FF).
"""
import json
import pathlib
import re
import sys

FILES = ["sample", "method", "uri", "connection", "content-length", "transfer-encoding",
         "invalid", "finish", "pipelining"]
STRICT_TYPES = {"request", "request-finish"}
# llhttp pauses here rather than failing: the rest of the bytes belong to another protocol.
PAUSE_CODES = {22, 23}


def expand(raw: str) -> bytes:
    """llhttp's md-test.ts rules, in its order."""
    text = re.sub(r"\n\Z", "", raw)
    text = re.sub(r"\\(\r\n|\r|\n)", "", text)
    text = re.sub(r"\r\n|\r|\n", "\r\n", text)
    text = text.replace("\\r", "\r").replace("\\n", "\n").replace("\\t", "\t")
    text = text.replace("\\f", "\f")
    text = re.sub(r"\\x([0-9a-fA-F]+)", lambda m: chr(int(m.group(1), 16)), text)
    text = re.sub(r"\\([0-7]{1,3})", lambda m: chr(int(m.group(1), 8)), text)
    if "${" in text:
        raise ValueError("inline JavaScript is not supported")
    return text.encode("utf-8")  # as the runner hands the input to the parser (Buffer)


SPAN = re.compile(r'^off=(\d+) len=\d+ span\[(\w+)\]="(.*)"$')


def unquote_span(text: str) -> str:
    # Spans are printed raw between quotes, with \t and \f escaped (md-test.ts undoes those);
    # as bytes, one character each, like the request.
    text = text.replace("\\t", "\t").replace("\\f", "\f")
    return text.encode("utf-8").decode("latin-1")


def read_log(log: str) -> dict:
    """What the parser reported: messages (complete or not), and how it stopped."""
    messages = []
    current = None
    field = None
    value = None
    stopped = {"error": None, "code": None, "pause": False, "finish": None}
    for line in log.splitlines():
        span = SPAN.match(line)
        if span:
            kind, text = span.group(2), unquote_span(span.group(3))
            if kind in ("method", "url", "version", "body"):
                current[kind] = current.get(kind, "") + text
            elif kind == "header_field":
                field = (field or "") + text
            elif kind == "header_value":
                value = (value or "") + text
            continue
        event = re.sub(r"^off=\w+ ", "", line)
        if event == "message begin":
            current = {"complete": False, "offset": int(line.split()[0][4:]), "line_done": False}
            messages.append(current)
            field = value = None
        elif event == "version complete":
            current["line_done"] = True
        elif event == "header_value complete":
            # Fields after the head are a chunked body's trailer section.
            kind = "trailers" if current.get("head_done") else "headers"
            current.setdefault(kind, []).append([field or "", value or ""])
            field = value = None
        elif event.startswith("headers complete"):
            current["head_done"] = True
        elif event == "message complete":
            current["complete"] = True
            current["end"] = int(line.split()[0][4:])
        elif event.startswith("error code="):
            match = re.match(r'error code=(\d+) reason="(.*)"$', event)
            code = int(match.group(1))
            if code in PAUSE_CODES:
                stopped["pause"] = True
            else:
                stopped["error"] = match.group(2)
                stopped["code"] = code
        elif event.startswith("finish="):
            stopped["finish"] = int(event.split("=")[1])
    return {"messages": messages, **stopped}


def cases_of(path: pathlib.Path):
    lines = path.read_text(encoding="utf-8").split("\n")
    heading_line = 0
    meta = None
    at = 0
    while at < len(lines):
        line = lines[at]
        if line.startswith("#"):
            heading_line = at + 1
        elif line.startswith("<!-- meta="):
            meta = json.loads(line[len("<!-- meta="):line.rindex("-->")])
        elif line.startswith("```http"):
            end = lines.index("```", at + 1)
            raw = "\n".join(lines[at + 1:end]) + "\n"
            log_start = next(i for i in range(end + 1, len(lines)) if lines[i].startswith("```log"))
            log_end = lines.index("```", log_start + 1)
            log = "\n".join(lines[log_start + 1:log_end])
            at = log_end
            if meta and meta.get("type") in STRICT_TYPES:
                yield f"{path.name}:{heading_line}", meta, expand(raw), read_log(log)
            meta = None
        at += 1


HOST = b"Host: a\r\n"


def with_host(request: bytes, messages: list):
    """The request with `Host: a` after each message's request line, when each is an HTTP/1.1
    request line that llhttp read whole and ended with CRLF; else None. The proxy refuses
    HTTP/1.1 without Host (RFC 9112 §3.2), as llhttp does not: this variant lets the rest of such
    a case be compared."""
    if not messages or any(m.get("version") != "1.1" or not m["line_done"] for m in messages):
        return None
    if any(h[0].lower() == "host" for m in messages for h in m.get("headers", [])):
        return None
    out = b""
    at = 0
    for message in messages:
        end = request.find(b"\r\n", message["offset"])
        if end < 0 or request.find(b"\n", message["offset"]) < end:
            return None
        if request[end + 2:end + 3] in (b" ", b"\t"):
            return None  # a field line would become the continuation of Host's
        out += request[at:end + 2] + HOST
        at = end + 2
    return out + request[at:]


def main() -> None:
    folder = pathlib.Path(sys.argv[1])
    out = []
    for name in FILES:
        for case_id, meta, request, parsed in cases_of(folder / f"{name}.md"):
            messages = []
            for message in parsed["messages"]:
                entry = {
                    "method": message.get("method", ""),
                    "target": message.get("url", ""),
                    "version": message.get("version", ""),
                    "headers": message.get("headers", []),
                    "trailers": message.get("trailers", []),
                    "body": message.get("body", ""),
                    "complete": message["complete"],
                }
                messages.append(entry)
            case = {
                "id": case_id,
                "request": request.decode("latin-1"),  # one character per byte
                "finish": meta["type"] == "request-finish",
                "skip_body": bool(meta.get("skipBody")),
                "messages": messages,
                "error": parsed["error"],
                "upgrade": parsed["pause"],
            }
            if parsed["finish"] is not None:
                case["finish_error"] = parsed["finish"] != 0
            if parsed["pause"] and "end" in parsed["messages"][-1]:
                # What follows the message that switched protocols: the tunnel's first bytes.
                end = parsed["messages"][-1]["end"]
                case["tunneled"] = request[end:].decode("latin-1")
            out.append(case)
            hosted = with_host(request, parsed["messages"])
            if hosted is not None:
                out.append({**case, "id": case_id + "+host", "request": hosted.decode("latin-1"),
                            "messages": [{**m, "headers": [["Host", "a"]] + m["headers"]}
                                         for m in messages]})
    json.dump(out, sys.stdout, indent=1, ensure_ascii=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
