"""HTTP/2 client scenarios for the proxy's tests: well-formed requests and protocol abuse.

Usage: h2_peer.py SCENARIO --port PORT [--tls [--ca CAFILE] [--server-name NAME]] [options]

Connects to 127.0.0.1:PORT with prior-knowledge h2c, or with --tls over TLS offering ALPN "h2"
only (verified against CAFILE for NAME, default localhost; unverified without --ca). Every
scenario ends within --timeout seconds (default 5) and prints exactly one JSON object on one line.

Fields every scenario prints:
  scenario          its name
  goaway            null, or the last GOAWAY: {"error_code", "last_stream_id", "debug_data"}
  closed            the server closed the TCP connection (a read met EOF or a reset)
  resets            {"stream id": error code} for each RST_STREAM received
  responses         {"stream id": {"status", "headers", "body_bytes", "trailers"}}, completed ones
  incomplete        the same for responses whose headers came but whose END_STREAM did not
  error             null, or a local failure (no connection, unreadable frames from the server)
  server_settings   {"MAX_CONCURRENT_STREAMS": 100, ...} from the server's SETTINGS frames
  frames            {"SETTINGS": 2, "GOAWAY": 1, ...}: how many frames of each type came
  alpn              the protocol the TLS server chose (null on h2c)
  non_h2_reply      only when the server's first bytes are no SETTINGS frame: their first line
  elapsed           seconds from start to the end of the scenario
  send_stalled      only when a write blocked for a second: the server had stopped reading
  send_error        only when a write failed (the server had closed or reset the connection)
  read_error        only when a read failed so (a TCP reset, a TLS EOF without close_notify)

Scenarios and the fields each adds:
  get --path P [--streams N] [--respect-limit]   streams_opened, max_concurrent_streams,
      header_table_size, max_header_list_size (the server's SETTINGS, null if not sent)
  post --path P --body-bytes N [--no-content-length] [--first-posts K --first-path Q]
      body_sent, request_body_sha256, body_sha256 (of the response body; null if the response
      did not complete), stream_id; with K, K POSTs of the same body to Q come first on the
      connection, each sent until its response or reset came (their answers among responses
      and resets)
  reset-after-headers --path P --wait-ms M [--second-path P2]   reset_sent,
      first_completed_before_reset, second_stream_id (3, or null if the connection could not
      take it); the second GET is of P2 (default: P)
  refused-then-get --path P   second_stream_id (3, or null if the connection could not take it)
  idle [--after-get]   seconds (from the SETTINGS exchange, or from the response to a GET of
      --path, to the first GOAWAY or close; null if neither)
  rapid-reset --count N   sent (HEADERS+RST_STREAM pairs written), probe_acked
  continuation-flood --frames N   sent (CONTINUATION frames written)
  settings-flood --count N   sent, probe_acked, settings_acks (all SETTINGS ACKs received)
  ping-flood --count N   sent, probe_acked, ping_acks (all PING ACKs received, the probe's too)
  big-headers --bytes N [--single]   sent, header_list_bytes, block_bytes, fields
  hpack-bomb --count N   requests_sent, planted, block_bytes, header_list_bytes (of stream 3)
  data-on-stream-zero   sent
  window-overflow [--via data|window-update]   data: data_sent, window; window-update: sent
  bad-preface   sent, bytes_received
probe_acked: after a flood, a PING was written and its ACK came back, so the server had read
every frame before it and was still answering. --header NAME:VALUE adds request headers to
get, post, reset-after-headers, refused-then-get (its second GET), idle --after-get, rapid-reset,
big-headers and window-overflow. --rcvbuf BYTES shrinks our receive buffer, so that a flood's ACKs
back up in the server rather than in ours. --show-body adds "body" (as text) to each response.
Stream ids are JSON object keys, so they are strings. Header names and values are UTF-8 text.

Well-formed traffic goes through h2's state machine (H2Connection); abusive traffic is written as
raw frames, which h2 would refuse to send. Either way the same permissive reader records what the
server sends, so that the results of the two kinds read alike.
"""
import argparse
import hashlib
import json
import math
import signal
import socket
import ssl
import struct
import sys
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import hpack
import hyperframe.exceptions
import hyperframe.frame as hf

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# RFC 9113's minimum for SETTINGS_MAX_FRAME_SIZE, which every server accepts.
FRAME_SIZE = 16384
DEFAULT_WINDOW = 65535

TYPE_DATA = 0x0
SETTINGS = {0x1: "HEADER_TABLE_SIZE", 0x2: "ENABLE_PUSH", 0x3: "MAX_CONCURRENT_STREAMS",
            0x4: "INITIAL_WINDOW_SIZE", 0x5: "MAX_FRAME_SIZE", 0x6: "MAX_HEADER_LIST_SIZE",
            0x8: "ENABLE_CONNECT_PROTOCOL", 0x9: "NO_RFC7540_PRIORITIES"}
FRAME_NAMES = {0x0: "DATA", 0x1: "HEADERS", 0x2: "PRIORITY", 0x3: "RST_STREAM", 0x4: "SETTINGS",
               0x5: "PUSH_PROMISE", 0x6: "PING", 0x7: "GOAWAY", 0x8: "WINDOW_UPDATE",
               0x9: "CONTINUATION"}
CANCEL = 0x8
# After a GOAWAY, how long to keep reading to see whether the server also closes.
GOAWAY_GRACE = 0.5
# A send blocked this long means the server stopped reading: stop sending, go on reading.
SEND_STALL = 1.0
# Frames written per sendall in the floods: few enough that "sent" stays close to the truth.
BATCH = 16


class Watchdog(Exception):
    pass


def raw_frame(frame_type, flags, stream_id, payload=b""):
    """Frame bytes built by hand, for frames hyperframe refuses to build (DATA on stream 0)."""
    return (struct.pack(">I", len(payload))[1:] + struct.pack(">BBI", frame_type, flags, stream_id)
            + payload)


def text(value):
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else value


class Connection:
    """One connection to the server: sends bytes and frames, reads and records frames."""

    def __init__(self, args):
        self.args = args
        self.started = time.monotonic()
        self.deadline = self.started + args.timeout
        self.sock = None
        self.h2 = None
        # Only raw scenarios use it, never on a connection that h2 encodes for.
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.decoder.max_header_list_size = 1 << 30  # the server is the one under test, not us
        self.inbuf = bytearray()
        self.block = None  # the header block being gathered from HEADERS and CONTINUATIONs
        self.streams = {}  # stream id -> response whose END_STREAM has not come yet
        self.hashes = {}
        self.server_settings = {}
        self.settings_seen = False
        self.settings_acked = False
        self.ping_acks = set()  # opaque data of PING ACKs received
        self.acks = {"SETTINGS": 0, "PING": 0}
        self.window_updates = {}  # stream id -> sum of WINDOW_UPDATE increments received
        self.probe_data = None
        # Off while our own header block is open: any other frame of ours would break it.
        self.answering = True
        self.goaway_at = None
        self.closed_at = None
        self.send_failed = False
        self.not_h2 = False
        self.bytes_received = 0
        self.result = {"goaway": None, "closed": False, "resets": {}, "responses": {},
                       "incomplete": {}, "error": None, "server_settings": {}, "frames": {},
                       "alpn": None}

    # -- time and connection --------------------------------------------------------------------

    def remaining(self):
        return max(0.0, self.deadline - time.monotonic())

    def connect(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if self.args.rcvbuf:
            # Before connecting, so that the window we advertise is small from the start.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.args.rcvbuf)
        sock.settimeout(max(0.001, self.remaining()))
        try:
            sock.connect(("127.0.0.1", self.args.port))
        except OSError:
            sock.close()
            raise
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.args.tls:
            if self.args.ca:
                context = ssl.create_default_context(cafile=self.args.ca)
            else:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            context.set_alpn_protocols(["h2"])
            sock = context.wrap_socket(sock, server_hostname=self.args.server_name)
            self.result["alpn"] = sock.selected_alpn_protocol()
            if self.result["alpn"] != "h2":
                sock.close()
                raise RuntimeError(f"the server chose ALPN {self.result['alpn']!r}, not h2")
        self.sock = sock

    def authority(self):
        if self.args.authority:
            return self.args.authority
        host = self.args.server_name if self.args.tls else "127.0.0.1"
        return f"{host}:{self.args.port}"

    def request_headers(self, method, path, extra=()):
        headers = [(":method", method), (":scheme", "https" if self.args.tls else "http"),
                   (":path", path), (":authority", self.authority())]
        return headers + list(extra)

    def start_h2(self, validate=True):
        """Preface and SETTINGS through h2, which from then on also sees every byte received.
        validate=False: h2 sends our header fields as they are, even those HTTP/2 forbids."""
        config = h2.config.H2Configuration(client_side=True, header_encoding=None,
                                           validate_outbound_headers=validate,
                                           normalize_outbound_headers=validate)
        self.h2 = h2.connection.H2Connection(config=config)
        self.h2.initiate_connection()
        self.flush()

    def start_raw(self, wait_for_settings=True):
        """Preface and our SETTINGS written by hand; then, by default, waits for the server's."""
        settings = hf.SettingsFrame(0, settings={hf.SettingsFrame.ENABLE_PUSH: 0})
        self.send(PREFACE + settings.serialize())
        if wait_for_settings:
            self.pump(until=lambda: self.settings_seen, stop_on_goaway=True)
            # Our encoder may not use a larger table than the server's decoder allows.
            table = self.server_settings.get(hf.SettingsFrame.HEADER_TABLE_SIZE, 4096)
            if table < self.encoder.header_table_size:
                self.encoder.header_table_size = table

    # -- sending --------------------------------------------------------------------------------

    def send(self, data):
        """Writes all of data; False once the connection cannot take more."""
        if self.send_failed or self.sock is None:
            return False
        try:
            self.sock.settimeout(max(0.001, min(self.remaining(), SEND_STALL)))
            self.sock.sendall(data)
            return True
        except socket.timeout:
            self.result["send_stalled"] = True
        except OSError as e:  # ssl.SSLError too
            # The server is gone or going; reading still finds what it sent before (a GOAWAY).
            self.result["send_error"] = f"{type(e).__name__}: {e}"
        self.send_failed = True
        return False

    def send_frame(self, frame):
        return self.send(frame.serialize())

    def flush(self):
        if self.h2 is not None:
            data = self.h2.data_to_send()
            if data:
                self.send(data)

    def header_frames(self, stream_id, block, end_stream):
        """HEADERS, then CONTINUATIONs as needed, carrying block; the last one ends the headers."""
        chunks = [block[i:i + FRAME_SIZE] for i in range(0, len(block), FRAME_SIZE)] or [b""]
        out = []
        for i, chunk in enumerate(chunks):
            if i == 0:
                frame = hf.HeadersFrame(stream_id, chunk)
                if end_stream:
                    frame.flags.add("END_STREAM")
            else:
                frame = hf.ContinuationFrame(stream_id, chunk)
            if i == len(chunks) - 1:
                frame.flags.add("END_HEADERS")
            out.append(frame.serialize())
        return b"".join(out)

    def probe(self):
        """A PING after a flood: its ACK means the server read every frame before it."""
        self.probe_data = b"probe-ok"
        return self.send_frame(hf.PingFrame(0, self.probe_data))

    def probe_acked(self):
        return self.probe_data is not None and self.probe_data in self.ping_acks

    # -- reading --------------------------------------------------------------------------------

    def mark_closed(self):
        self.result["closed"] = True
        if self.closed_at is None:
            self.closed_at = time.monotonic()

    def pump(self, until=None, stop_on_goaway=False, seconds=None):
        """Reads and records frames until until() holds, the server closes, the deadline (or
        seconds from now) passes or, with stop_on_goaway, shortly after a GOAWAY."""
        end = self.deadline if seconds is None else min(self.deadline, time.monotonic() + seconds)
        while self.sock is not None and not self.result["closed"]:
            if until is not None and until():
                return True
            limit = end
            if stop_on_goaway and self.goaway_at is not None:
                limit = min(limit, self.goaway_at + GOAWAY_GRACE)
            now = time.monotonic()
            if now >= limit:
                break
            self.sock.settimeout(limit - now)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError as e:  # a TCP reset, or TLS ending without close_notify
                self.result["read_error"] = f"{type(e).__name__}: {e}"
                self.mark_closed()
                break
            if not data:
                self.mark_closed()
                break
            self.receive(data)
        return until is not None and until()

    def receive(self, data):
        self.bytes_received += len(data)
        if self.bytes_received == len(data) and (data.startswith(b"HTTP/") or (
                len(data) >= 9 and (data[3] != 0x4 or any(data[5:9])))):
            # A server's HTTP/2 preface is a SETTINGS frame; this is something else, such as an
            # HTTP/1 answer to a bad preface. Its first line is all there is to report.
            self.not_h2 = True
            self.result["non_h2_reply"] = text(data.split(b"\n", 1)[0].rstrip(b"\r")[:200])
        if self.not_h2:
            return
        if self.h2 is not None:
            try:
                self.on_h2_events(self.h2.receive_data(data))
            except h2.exceptions.ProtocolError as e:
                # h2 would end the connection here; the raw reader goes on recording.
                self.result["error"] = f"h2 rejected the server's frames: {e!r}"
                self.h2 = None
            self.flush()
        self.inbuf += data
        while len(self.inbuf) >= 9:
            length = int.from_bytes(self.inbuf[:3], "big")
            if len(self.inbuf) < 9 + length:
                break
            header = bytes(self.inbuf[:9])
            body = bytes(self.inbuf[9:9 + length])
            del self.inbuf[:9 + length]
            try:
                frame, _ = hf.Frame.parse_frame_header(memoryview(header))
                frame.parse_body(memoryview(body))
            except hyperframe.exceptions.HyperframeError as e:
                self.result["error"] = f"unreadable frame from the server: {e!r}"
                continue
            self.on_frame(frame)

    def on_h2_events(self, events):
        for event in events:
            if isinstance(event, h2.events.DataReceived) and event.flow_controlled_length:
                try:
                    self.h2.acknowledge_received_data(event.flow_controlled_length,
                                                      event.stream_id)
                except h2.exceptions.StreamClosedError:
                    pass

    def on_frame(self, frame):
        name = FRAME_NAMES.get(frame.type, f"0x{frame.type:02x}")
        self.result["frames"][name] = self.result["frames"].get(name, 0) + 1
        # Without h2, answering SETTINGS, PING and DATA is ours to do.
        raw = self.h2 is None and self.answering

        if isinstance(frame, hf.SettingsFrame):
            if "ACK" in frame.flags:
                self.settings_acked = True
                self.acks["SETTINGS"] += 1
            else:
                self.settings_seen = True
                self.server_settings.update(frame.settings)
                for code, value in frame.settings.items():
                    self.result["server_settings"][SETTINGS.get(code, str(code))] = value
                if raw:
                    self.send_frame(hf.SettingsFrame(0, flags=["ACK"]))
        elif isinstance(frame, hf.PingFrame):
            if "ACK" in frame.flags:
                self.ping_acks.add(bytes(frame.opaque_data))
                self.acks["PING"] += 1
            elif raw:
                self.send_frame(hf.PingFrame(0, frame.opaque_data, flags=["ACK"]))
        elif isinstance(frame, hf.GoAwayFrame):
            self.result["goaway"] = {"error_code": frame.error_code,
                                     "last_stream_id": frame.last_stream_id,
                                     "debug_data": text(frame.additional_data)}
            if self.goaway_at is None:
                self.goaway_at = time.monotonic()
        elif isinstance(frame, hf.RstStreamFrame):
            self.result["resets"][str(frame.stream_id)] = frame.error_code
            response = self.streams.pop(frame.stream_id, None)
            if response is not None and response["status"] is not None:
                self.result["incomplete"][str(frame.stream_id)] = response
        elif isinstance(frame, hf.WindowUpdateFrame):
            self.window_updates[frame.stream_id] = (self.window_updates.get(frame.stream_id, 0)
                                                    + frame.window_increment)
        elif isinstance(frame, (hf.HeadersFrame, hf.PushPromiseFrame)):
            # PUSH_PROMISE's block is decoded too, to keep HPACK's table in step; else ignored.
            self.block = {"stream": frame.stream_id, "data": bytearray(frame.data),
                          "end_stream": "END_STREAM" in frame.flags,
                          "push": isinstance(frame, hf.PushPromiseFrame)}
            if "END_HEADERS" in frame.flags:
                self.end_header_block()
        elif isinstance(frame, hf.ContinuationFrame):
            if self.block is not None:
                self.block["data"] += frame.data
                if "END_HEADERS" in frame.flags:
                    self.end_header_block()
        elif isinstance(frame, hf.DataFrame):
            self.on_data(frame)
            if raw and frame.flow_controlled_length:
                increment = frame.flow_controlled_length
                self.send(hf.WindowUpdateFrame(0, increment).serialize()
                          + hf.WindowUpdateFrame(frame.stream_id, increment).serialize())

    def end_header_block(self):
        block, self.block = self.block, None
        try:
            fields = self.decoder.decode(bytes(block["data"]), raw=True)
        except hpack.HPACKError as e:
            self.result["error"] = f"undecodable header block from the server: {e!r}"
            return
        if block["push"]:
            return
        stream_id = block["stream"]
        pairs = [[text(n), text(v)] for n, v in fields]
        response = self.streams.get(stream_id)
        if response is None:
            status = next((v for n, v in pairs if n == ":status"), None)
            status = int(status) if status is not None and status.isdigit() else None
            if status is not None and 100 <= status < 200:
                return  # an interim response; the final one follows
            response = {"status": status, "headers": [p for p in pairs if not p[0].startswith(":")],
                        "body_bytes": 0, "trailers": []}
            if self.args.show_body:
                response["body"] = ""
            self.streams[stream_id] = response
            self.hashes[stream_id] = hashlib.sha256()
        else:
            response["trailers"] = pairs
        if block["end_stream"]:
            self.complete(stream_id)

    def on_data(self, frame):
        response = self.streams.get(frame.stream_id)
        if response is None:
            return  # DATA for a stream with no response open: nothing to record it in
        response["body_bytes"] += len(frame.data)
        self.hashes[frame.stream_id].update(frame.data)
        if self.args.show_body:
            response["body"] += text(bytes(frame.data))
        if "END_STREAM" in frame.flags:
            self.complete(frame.stream_id)

    def complete(self, stream_id):
        self.result["responses"][str(stream_id)] = self.streams.pop(stream_id)

    # -- state queries --------------------------------------------------------------------------

    def completed(self, stream_id):
        return str(stream_id) in self.result["responses"]

    def usable(self):
        """h2 can still send: no GOAWAY, no close, no failed write."""
        return (self.h2 is not None and not self.send_failed and not self.result["closed"]
                and self.result["goaway"] is None)

    def settled(self, stream_id):
        """The stream will see no more: answered, reset, or beyond the server's GOAWAY."""
        goaway = self.result["goaway"]
        return (self.completed(stream_id) or str(stream_id) in self.result["resets"]
                or (goaway is not None and stream_id > goaway["last_stream_id"]))

    def finish(self):
        for stream_id, response in self.streams.items():
            if response["status"] is not None:
                self.result["incomplete"][str(stream_id)] = response
        for key in ("responses", "incomplete", "resets"):
            self.result[key] = dict(sorted(self.result[key].items(), key=lambda i: int(i[0])))
        self.result["elapsed"] = round(time.monotonic() - self.started, 3)
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass


def parse_header(spec):
    # A pseudo-header's name starts with a colon: split at the first colon after it.
    cut = spec.find(":", 1)
    if cut < 1:
        raise argparse.ArgumentTypeError(f"not name:value: {spec!r}")
    return spec[:cut].strip().lower(), spec[cut + 1:].strip()


# -- well-formed scenarios --------------------------------------------------------------------

def scenario_get(conn, args):
    """N GETs on one connection, all sent at once (or, with --respect-limit, no more at a time
    than the server's SETTINGS_MAX_CONCURRENT_STREAMS)."""
    conn.start_h2()
    headers = conn.request_headers("GET", args.path, args.header)
    opened = []

    def open_one():
        stream_id = conn.h2.get_next_available_stream_id()
        conn.h2.send_headers(stream_id, headers, end_stream=True)
        opened.append(stream_id)

    if args.respect_limit:
        conn.pump(until=lambda: conn.settings_seen)

        def room():
            limit = conn.server_settings.get(hf.SettingsFrame.MAX_CONCURRENT_STREAMS, 1 << 31)
            return sum(not conn.settled(s) for s in opened) < limit

        while len(opened) < args.streams and conn.usable():
            while len(opened) < args.streams and room():
                open_one()
            conn.flush()
            if len(opened) < args.streams and not conn.pump(until=room):
                break
    else:
        # Before the server's SETTINGS arrive h2 assumes no stream limit, so all N go out.
        for _ in range(args.streams):
            open_one()
        conn.flush()
    conn.pump(until=lambda: all(conn.settled(s) for s in opened))
    return {"streams_opened": len(opened),
            "max_concurrent_streams": conn.server_settings.get(
                hf.SettingsFrame.MAX_CONCURRENT_STREAMS),
            "header_table_size": conn.server_settings.get(hf.SettingsFrame.HEADER_TABLE_SIZE),
            "max_header_list_size": conn.server_settings.get(
                hf.SettingsFrame.MAX_HEADER_LIST_SIZE)}


def upload(conn, args, path, body):
    """One POST of body to path, sent as the flow-control windows allow, until it is all sent
    or the stream settles; its stream id and how many bytes went."""
    total = len(body)
    extra = list(args.header)
    if not args.no_content_length:
        extra.append(("content-length", str(total)))
    stream_id = conn.h2.get_next_available_stream_id()
    conn.h2.send_headers(stream_id, conn.request_headers("POST", path, extra),
                         end_stream=total == 0)
    conn.flush()

    def window():
        if conn.h2 is None:
            return 0
        try:
            return min(conn.h2.local_flow_control_window(stream_id),
                       conn.h2.max_outbound_frame_size)
        except (h2.exceptions.StreamClosedError, h2.exceptions.NoSuchStreamError):
            return 0

    sent = 0
    while sent < total and not conn.settled(stream_id) and not conn.send_failed:
        size = min(window(), total - sent)
        if size > 0:
            try:
                conn.h2.send_data(stream_id, body[sent:sent + size],
                                  end_stream=sent + size == total)
            except h2.exceptions.ProtocolError as e:
                # h2 sends nothing after a GOAWAY, even on streams the GOAWAY still allows.
                conn.result["upload_stopped"] = repr(e)
                break
            conn.flush()
            sent += size
        elif not conn.pump(until=lambda: window() > 0 or conn.settled(stream_id)):
            break  # closed, timed out, or h2 gave up on the connection
    conn.pump(until=lambda: conn.settled(stream_id))
    return stream_id, sent


def scenario_post(conn, args):
    """One POST of --body-bytes 'x's, sent as the flow-control windows allow; with --first-posts
    K, after K such POSTs to --first-path on the same connection, each sent until its response
    (or reset) comes."""
    conn.start_h2()
    body = b"x" * args.body_bytes
    for _ in range(args.first_posts):
        upload(conn, args, args.first_path, body)
    stream_id, sent = upload(conn, args, args.path, body)
    return {"body_sent": sent,
            "request_body_sha256": hashlib.sha256(body).hexdigest(),
            "body_sha256": (conn.hashes[stream_id].hexdigest() if conn.completed(stream_id)
                            else None),
            "stream_id": stream_id}


def scenario_reset_after_headers(conn, args):
    """A GET cancelled after --wait-ms, then a second GET on the same connection."""
    conn.start_h2()
    headers = conn.request_headers("GET", args.path, args.header)
    first = conn.h2.get_next_available_stream_id()
    conn.h2.send_headers(first, headers, end_stream=True)
    conn.flush()
    conn.pump(until=lambda: conn.settled(first), seconds=args.wait_ms / 1000)
    reset_sent = False
    completed_before = conn.completed(first)
    if not conn.settled(first) and conn.usable():
        conn.h2.reset_stream(first, h2.errors.ErrorCodes.CANCEL)
        conn.flush()
        reset_sent = not conn.send_failed
    second = None
    if conn.usable():
        second = conn.h2.get_next_available_stream_id()
        if args.second_path is not None:
            headers = conn.request_headers("GET", args.second_path, args.header)
        conn.h2.send_headers(second, headers, end_stream=True)
        conn.flush()
        conn.pump(until=lambda: conn.settled(second))
    # The first response may still complete after the reset: it crossed it on the way.
    return {"reset_sent": reset_sent, "first_completed_before_reset": completed_before,
            "second_stream_id": second}


def scenario_refused_then_get(conn, args):
    """A GET with a field HTTP/2 forbids (connection: close), which the server must refuse on
    its stream alone, then a GET of --path on the same connection."""
    conn.start_h2(validate=False)
    first = conn.h2.get_next_available_stream_id()
    conn.h2.send_headers(first, conn.request_headers("GET", "/", [("connection", "close")]),
                         end_stream=True)
    conn.flush()
    conn.pump(until=lambda: conn.settled(first))
    second = None
    if conn.usable():
        second = conn.h2.get_next_available_stream_id()
        conn.h2.send_headers(second, conn.request_headers("GET", args.path, args.header),
                             end_stream=True)
        conn.flush()
        conn.pump(until=lambda: conn.settled(second))
    return {"second_stream_id": second}


def scenario_idle(conn, args):
    """Preface and SETTINGS both ways (and with --after-get, a GET of --path and its response),
    then silence: how long until the server ends it."""
    conn.start_h2()
    conn.pump(until=lambda: conn.settings_seen and conn.settings_acked)
    if args.after_get:
        stream_id = conn.h2.get_next_available_stream_id()
        conn.h2.send_headers(stream_id, conn.request_headers("GET", args.path, args.header),
                             end_stream=True)
        conn.flush()
        conn.pump(until=lambda: conn.settled(stream_id))
    quiet_from = time.monotonic()
    conn.pump(until=lambda: conn.goaway_at is not None or conn.closed_at is not None)
    conn.pump(stop_on_goaway=True)  # after a GOAWAY, whether the close follows
    ends = [t for t in (conn.goaway_at, conn.closed_at) if t is not None]
    return {"seconds": round(min(ends) - quiet_from, 3) if ends else None}


# -- abusive scenarios ------------------------------------------------------------------------

def scenario_rapid_reset(conn, args):
    """GET then RST_STREAM(CANCEL) at once, --count times, as fast as the socket takes them."""
    conn.start_raw()
    fields = conn.request_headers("GET", args.path, args.header)
    request = conn.encoder.encode([(n, v, True) for n, v in fields], huffman=False)
    sent = 0
    batch = []
    for i in range(args.count):
        stream_id = 2 * i + 1
        batch.append(conn.header_frames(stream_id, request, end_stream=True))
        batch.append(hf.RstStreamFrame(stream_id, CANCEL).serialize())
        if len(batch) >= 2 * BATCH or i == args.count - 1:
            if not conn.send(b"".join(batch)):
                break
            sent += len(batch) // 2
            batch.clear()
    if sent == args.count:
        conn.probe()
    conn.pump(until=conn.probe_acked, stop_on_goaway=True)
    return {"sent": sent, "probe_acked": conn.probe_acked()}


def scenario_continuation_flood(conn, args):
    """HEADERS without END_HEADERS, then --frames CONTINUATIONs that never end the block."""
    conn.start_raw()
    pseudo = [(n, v, True) for n, v in conn.request_headers("GET", "/")]
    first = hf.HeadersFrame(1, conn.encoder.encode(pseudo, huffman=False), flags=["END_STREAM"])
    sent = 0
    conn.answering = False
    if conn.send(first.serialize()):
        batch = []
        for i in range(args.frames):
            # New names, never indexed: every frame adds fresh bytes to the header list.
            fields = [(f"x-flood-{i}-{j}", "v" * 90, True) for j in range(3)]
            batch.append(hf.ContinuationFrame(1, conn.encoder.encode(fields, huffman=False))
                         .serialize())
            if len(batch) >= BATCH or i == args.frames - 1:
                if not conn.send(b"".join(batch)):
                    break
                sent += len(batch)
                batch.clear()
    # A PING here would itself be a protocol error mid-block, so no probe: read till the end.
    conn.pump(stop_on_goaway=True)
    return {"sent": sent}


def flood(conn, frame_bytes, count):
    """Writes count copies of frame_bytes without reading; how many went out."""
    sent = 0
    while sent < count:
        n = min(BATCH * 64, count - sent)
        if not conn.send(frame_bytes * n):
            break
        sent += n
    return sent


def scenario_settings_flood(conn, args):
    """--count empty SETTINGS frames, each owing an ACK, without reading the ACKs."""
    conn.start_raw()
    sent = flood(conn, hf.SettingsFrame(0).serialize(), args.count)
    if sent == args.count:
        conn.probe()
    conn.pump(until=conn.probe_acked, stop_on_goaway=True)
    return {"sent": sent, "probe_acked": conn.probe_acked(),
            "settings_acks": conn.acks["SETTINGS"]}


def scenario_ping_flood(conn, args):
    """--count PINGs, each owing an ACK, without reading the ACKs."""
    conn.start_raw()
    sent = flood(conn, hf.PingFrame(0, b"flooding").serialize(), args.count)
    if sent == args.count:
        conn.probe()
    conn.pump(until=conn.probe_acked, stop_on_goaway=True)
    return {"sent": sent, "probe_acked": conn.probe_acked(),
            "ping_acks": conn.acks["PING"]}


def scenario_big_headers(conn, args):
    """One GET whose header list (RFC 9113 size: name + value + 32 per field) is about --bytes,
    in many 100-byte values or, with --single, one value; CONTINUATIONs carry what one frame
    cannot."""
    conn.start_raw()
    pseudo = conn.request_headers("GET", args.path, args.header)
    pseudo_size = sum(len(n) + len(v) + 32 for n, v in pseudo)
    wanted = max(0, args.bytes - pseudo_size)
    if args.single:
        fields = [("x-big", "v" * max(1, wanted - 32 - len("x-big")))]
    else:
        fields = [(f"x-big-{i:06d}", "v" * 100)
                  for i in range(max(1, math.ceil(wanted / (12 + 100 + 32))))]
    headers = pseudo + fields
    block = conn.encoder.encode([(n, v, True) for n, v in headers], huffman=False)
    list_size = sum(len(n) + len(v) + 32 for n, v in headers)
    sent = conn.send(conn.header_frames(1, block, end_stream=True))
    conn.pump(until=lambda: conn.settled(1), stop_on_goaway=True)
    return {"sent": sent, "header_list_bytes": list_size, "block_bytes": len(block),
            "fields": len(fields)}


def scenario_hpack_bomb(conn, args):
    """Stream 1 puts one ~4000-byte field into the server's HPACK table; stream 3 then names it
    --count times, one byte each, for a header list thousands of times its wire size."""
    conn.start_raw()
    name, value = "x-bomb", "b" * 4000

    def pseudo(path):
        # Never indexed, so that the bomb is the only entry of the dynamic table (index 62).
        return conn.encoder.encode([(n, v, True) for n, v in conn.request_headers("GET", path)],
                                   huffman=False)

    first = pseudo(args.path) + conn.encoder.encode([(name, value, False)], huffman=False)
    reference = conn.encoder.encode([(name, value, True)], huffman=False)  # an indexed field
    sent = conn.send(conn.header_frames(1, first, end_stream=True))
    conn.pump(until=lambda: conn.settled(1), stop_on_goaway=True)
    second = pseudo(args.path) + reference * args.count
    sent_second = False
    if conn.result["goaway"] is None and not conn.result["closed"]:
        sent_second = conn.send(conn.header_frames(3, second, end_stream=True))
        conn.pump(until=lambda: conn.settled(3), stop_on_goaway=True)
    return {"requests_sent": int(sent) + int(sent_second),
            # An indexed field has the top bit set; without it the server's table was too small
            # to hold the bomb, and the second request carries plain literals instead.
            "planted": bool(reference[0] & 0x80),
            "block_bytes": len(second),
            "header_list_bytes": (len(name) + len(value) + 32) * args.count}


def scenario_data_on_stream_zero(conn, args):
    """DATA on stream 0: a connection error of type PROTOCOL_ERROR (RFC 9113 6.1)."""
    conn.start_raw()
    sent = conn.send(raw_frame(TYPE_DATA, 0, 0, b"stream zero carries no data"))
    conn.pump(stop_on_goaway=True)
    return {"sent": sent}


def scenario_window_overflow(conn, args):
    """--via data: a POST whose DATA exceeds the smaller of the server's stream and connection
    windows, without waiting for WINDOW_UPDATE. --via window-update: a WINDOW_UPDATE on stream 0
    that takes the server's send window past 2^31-1. Both are FLOW_CONTROL_ERROR (RFC 9113 6.9)."""
    conn.start_raw()
    if args.via == "window-update":
        sent = conn.send_frame(hf.WindowUpdateFrame(0, 0x7FFFFFFF))
        conn.pump(stop_on_goaway=True)
        return {"sent": sent}
    stream_window = conn.server_settings.get(hf.SettingsFrame.INITIAL_WINDOW_SIZE, DEFAULT_WINDOW)
    stream_window += conn.window_updates.get(1, 0)
    connection_window = DEFAULT_WINDOW + conn.window_updates.get(0, 0)
    window = min(stream_window, connection_window)
    total = window + args.extra_bytes
    headers = conn.request_headers("POST", args.path, args.header)
    block = conn.encoder.encode([(n, v, True) for n, v in headers], huffman=False)
    sent = 0
    if conn.send(conn.header_frames(1, block, end_stream=False)):
        while sent < total:
            size = min(FRAME_SIZE, total - sent)
            frame = hf.DataFrame(1, b"x" * size)
            if sent + size == total:
                frame.flags.add("END_STREAM")
            if not conn.send(frame.serialize()):
                break
            sent += size
    conn.pump(until=lambda: conn.settled(1), stop_on_goaway=True)
    return {"data_sent": sent, "window": window}


def scenario_bad_preface(conn, args):
    """A preface whose last line is wrong: the server may not treat it as HTTP/2."""
    sent = conn.send(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n")
    conn.pump(stop_on_goaway=True)
    return {"sent": sent, "bytes_received": conn.bytes_received}


SCENARIOS = {
    "get": scenario_get,
    "post": scenario_post,
    "reset-after-headers": scenario_reset_after_headers,
    "refused-then-get": scenario_refused_then_get,
    "idle": scenario_idle,
    "rapid-reset": scenario_rapid_reset,
    "continuation-flood": scenario_continuation_flood,
    "settings-flood": scenario_settings_flood,
    "ping-flood": scenario_ping_flood,
    "big-headers": scenario_big_headers,
    "hpack-bomb": scenario_hpack_bomb,
    "data-on-stream-zero": scenario_data_on_stream_zero,
    "window-overflow": scenario_window_overflow,
    "bad-preface": scenario_bad_preface,
}


class Parser(argparse.ArgumentParser):
    """Usage errors, too, end in one JSON line, so that the caller always has one to parse."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print(json.dumps({"error": f"usage: {message}"}), flush=True)
        sys.exit(2)


def parse_arguments(argv):
    parser = Parser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--ca", help="CA file to verify the server with (--tls)")
    parser.add_argument("--server-name", default="localhost", help="SNI and name to verify")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds for everything")
    parser.add_argument("--rcvbuf", type=int, default=0,
                        help="SO_RCVBUF bytes: small, the server's answers to a flood back up")
    parser.add_argument("--path", default="/")
    parser.add_argument("--authority", help="default: 127.0.0.1:PORT, or NAME:PORT with --tls")
    parser.add_argument("--header", nargs="+", action="extend", type=parse_header, default=[],
                        metavar="NAME:VALUE", help="extra request headers; repeatable")
    parser.add_argument("--streams", type=int, default=1, help="get: how many GETs")
    parser.add_argument("--respect-limit", action="store_true",
                        help="get: keep within the server's MAX_CONCURRENT_STREAMS")
    parser.add_argument("--body-bytes", type=int, default=0, help="post: request body size")
    parser.add_argument("--no-content-length", action="store_true", help="post")
    parser.add_argument("--first-posts", type=int, default=0,
                        help="post: how many POSTs to --first-path come first")
    parser.add_argument("--first-path", default="/", help="post: see --first-posts")
    parser.add_argument("--show-body", action="store_true",
                        help="responses carry \"body\": the body as text (for small ones)")
    parser.add_argument("--count", type=int, default=1000,
                        help="rapid-reset, settings-flood, ping-flood, hpack-bomb")
    parser.add_argument("--frames", type=int, default=1000, help="continuation-flood")
    parser.add_argument("--bytes", type=int, default=65536, help="big-headers")
    parser.add_argument("--single", action="store_true", help="big-headers: one big value")
    parser.add_argument("--via", choices=["data", "window-update"], default="data",
                        help="window-overflow")
    parser.add_argument("--extra-bytes", type=int, default=FRAME_SIZE,
                        help="window-overflow --via data: how far past the window")
    parser.add_argument("--wait-ms", type=int, default=100, help="reset-after-headers")
    parser.add_argument("--second-path", help="reset-after-headers: the second GET's path")
    parser.add_argument("--after-get", action="store_true", help="idle: a GET first")
    return parser.parse_args(argv)


def main(argv):
    args = parse_arguments(argv)
    conn = Connection(args)

    def overran(*_):
        raise Watchdog()

    # The last resort if a blocking call ignored its socket timeout: still print the JSON.
    signal.signal(signal.SIGALRM, overran)
    signal.setitimer(signal.ITIMER_REAL, args.timeout + 2.0)
    extra = {}
    try:
        conn.connect()
        extra = SCENARIOS[args.scenario](conn, args) or {}
    except Watchdog:
        conn.result["error"] = "the scenario overran its timeout"
    except Exception as e:  # noqa: BLE001 - every failure becomes the JSON's error field
        conn.result["error"] = f"{type(e).__name__}: {e}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    conn.finish()
    print(json.dumps({"scenario": args.scenario, **conn.result, **extra}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
