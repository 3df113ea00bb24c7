// The official OpenAI and Anthropic clients as an application uses them, driven one call at a time
// by tests/clients/llm_clients_test.py: each line on standard input is one call (JSON), each line
// on standard output what the client saw of it (JSON). The clients never retry (maxRetries: 0), so
// a 429 reaches the caller as the SDK's error.
//
// A call: {"id", "sdk": "openai" | "anthropic", "api": "chat" | "responses" | "messages",
//          "mode", "base" (sluice's address), "key" (the API key), "model", "prompt", "max_tokens"}
// with mode, for OpenAI's chat completions: "json", "stream" (stream_options.include_usage) or
// "stream-no-usage"; for its responses API: "json" or "stream"; for Anthropic's messages: "json",
// "stream" (messages.create with stream: true) or "helper" (messages.stream and finalMessage).
//
// A result: {"id", "ok", "status", "usage" (as the SDK gave it), "text", "events"} or, when the
// call failed, {"id", "ok": false, "status", "retry_after", "error", "text" (what came before)}.
import readline from "node:readline";

import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

const options = (call) => ({ apiKey: call.key, maxRetries: 0, timeout: 10_000 });

async function openaiChat(call, text) {
  const client = new OpenAI({ ...options(call), baseURL: `${call.base}/v1` });
  const request = {
    model: call.model,
    messages: [{ role: "user", content: call.prompt }],
    max_tokens: call.max_tokens,
  };
  if (call.mode === "json") {
    const { data, response } = await client.chat.completions.create(request).withResponse();
    text.push(data.choices[0].message.content);
    return { status: response.status, usage: data.usage };
  }
  request.stream = true;
  if (call.mode === "stream") {
    request.stream_options = { include_usage: true };
  }
  const { data: stream, response } = await client.chat.completions
    .create(request)
    .withResponse();
  let usage = null;
  let events = 0;
  for await (const chunk of stream) {
    events += 1;
    if (chunk.choices.length > 0) {
      text.push(chunk.choices[0].delta.content ?? "");
    }
    if (chunk.usage) {
      usage = chunk.usage;
    }
  }
  return { status: response.status, usage, events };
}

async function openaiResponses(call, text) {
  const client = new OpenAI({ ...options(call), baseURL: `${call.base}/v1` });
  const request = { model: call.model, input: call.prompt, max_output_tokens: call.max_tokens };
  if (call.mode === "json") {
    const { data, response } = await client.responses.create(request).withResponse();
    text.push(data.output_text);
    return { status: response.status, usage: data.usage };
  }
  const { data: stream, response } = await client.responses
    .create({ ...request, stream: true })
    .withResponse();
  let usage = null;
  let events = 0;
  let completed = false;
  for await (const event of stream) {
    events += 1;
    if (event.type === "response.output_text.delta") {
      text.push(event.delta);
    } else if (event.type === "response.completed") {
      usage = event.response.usage;
      completed = true;
    }
  }
  return { status: response.status, usage, events, completed };
}

async function anthropicMessages(call, text) {
  const client = new Anthropic({ ...options(call), baseURL: call.base });
  const request = {
    model: call.model,
    max_tokens: call.max_tokens,
    messages: [{ role: "user", content: call.prompt }],
  };
  if (call.mode === "json") {
    const { data, response } = await client.messages.create(request).withResponse();
    text.push(data.content[0].text);
    return { status: response.status, usage: data.usage };
  }
  if (call.mode === "helper") {
    const stream = client.messages.stream(request);
    stream.on("text", (delta) => text.push(delta));
    const message = await stream.finalMessage();
    return { status: stream.response?.status ?? null, usage: message.usage, stop: message.stop_reason };
  }
  const { data: stream, response } = await client.messages
    .create({ ...request, stream: true })
    .withResponse();
  let usage = null;
  let events = 0;
  let stopped = false;
  for await (const event of stream) {
    events += 1;
    if (event.type === "message_start") {
      usage = { ...event.message.usage };
    } else if (event.type === "content_block_delta" && event.delta.type === "text_delta") {
      text.push(event.delta.text);
    } else if (event.type === "message_delta") {
      usage = { ...usage, ...event.usage };
    } else if (event.type === "message_stop") {
      stopped = true;
    }
  }
  return { status: response.status, usage, events, stopped };
}

const apis = { chat: openaiChat, responses: openaiResponses, messages: anthropicMessages };

async function run(call) {
  const text = [];
  try {
    const seen = await apis[call.api](call, text);
    return { id: call.id, ok: true, ...seen, text: text.join("") };
  } catch (error) {
    const headers = error.headers ?? {};
    return {
      id: call.id,
      ok: false,
      status: error.status ?? null,
      retry_after: headers["retry-after"] ?? null,
      error: `${error.constructor?.name ?? "Error"}: ${error.message}`,
      text: text.join(""),
    };
  }
}

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim() === "") {
    continue;
  }
  const result = await run(JSON.parse(line));
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
