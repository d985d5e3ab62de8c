#!/usr/bin/env python3
"""A small HTTP/1.1 file server that does what real servers do badly, on
purpose, for the tests of flashpipe's http(s) sources.

    fault_http.py ROOT PORT_FILE LOG_FILE CONFIG_FILE

Serves the files under ROOT on 127.0.0.1 (port picked by the kernel, written
to PORT_FILE) with Range (one or several: multipart/byteranges), If-Range,
ETag and Last-Modified, and appends one line per answer to LOG_FILE:
"METHOD PATH STATUS BODY_BYTES_SENT". CONFIG_FILE (JSON, read again for every
request, so a test changes faults between runs) may hold:
  rate          bytes/s per connection (0: unlimited)
  drop_prob     probability that a body is cut at a random offset (the
                connection is closed); drop_seed seeds the choice
  drop_first    the first N bodies are cut at a random offset
  stall_once    seconds to stop sending once, half-way through the first body
                of at least 1 MiB (not the probe's)
  ignore_range  answer 200 with the whole file to every Range request
  change_after  after N answers, the file's bytes and ETag change
  short_length  send a Content-Length N bytes larger than the body, then close
  redirect_loop answer every request with a 302 to itself
  no_validators send neither ETag nor Last-Modified
Counters (answers so far, stalls done) live in memory and start again when
CONFIG_FILE changes.
"""
import http.server
import json
import os
import random
import socketserver
import sys
import threading
import time

ROOT, PORT_FILE, LOG_FILE, CONFIG_FILE = sys.argv[1:5]
state = {"answers": 0, "stalled": False, "bodies": 0}
lock = threading.Lock()
rng = random.Random(1)


def config():
    """The faults; counters start again whenever the file changes."""
    try:
        with open(CONFIG_FILE) as f:
            text = f.read()
    except OSError:
        text = "{}"
    with lock:
        if state.get("config") != text:
            state.update(config=text, answers=0, stalled=False, bodies=0)
    try:
        return json.loads(text)
    except ValueError:
        return {}


def log(line):
    with lock, open(LOG_FILE, "a") as f:
        f.write(line + "\n")


def parse_ranges(value, size):
    if not value.startswith("bytes="):
        return None
    spans = []
    for part in value[6:].split(","):
        first, _, last = part.strip().partition("-")
        if first == "":
            n = int(last)
            spans.append((max(0, size - n), size))
        else:
            a = int(first)
            b = int(last) + 1 if last else size
            if a >= size:
                continue
            spans.append((a, min(b, size)))
    return spans


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def content(self, path, cfg, answer):
        """(size, etag, read(a, b)): the file as this answer serves it."""
        size = os.stat(path).st_size
        etag = '"%x-%x"' % (os.stat(path).st_mtime_ns, size)
        changed = (cfg.get("change_after") is not None and answer >= cfg["change_after"]
                   and not path.endswith(".bmap"))
        if changed:
            etag = '"changed-%x"' % size

        def read(a, b):
            with open(path, "rb") as f:
                f.seek(a)
                d = f.read(b - a)
            if changed and a < 4096:
                d = bytes(x ^ 0xFF for x in d[:4096 - a]) + d[4096 - a:]
            return d
        return size, etag, read

    def send_body(self, body, cfg, declared=None):
        """Sends `body`, with the configured faults; returns bytes sent."""
        with lock:
            state["bodies"] += 1
            nth = state["bodies"]
        cut = len(body)
        if body and (nth <= cfg.get("drop_first", 0) or
                     (cfg.get("drop_prob", 0) and rng.random() < cfg["drop_prob"])):
            cut = rng.randrange(0, len(body))
        stall_at = None
        if cfg.get("stall_once") and len(body) >= (1 << 20):
            with lock:
                if not state["stalled"]:
                    state["stalled"] = True
                    stall_at = len(body) // 2
        rate = cfg.get("rate", 0)
        sent, t0, chunk = 0, time.monotonic(), 16384
        try:
            while sent < cut:
                if stall_at is not None and sent >= stall_at:
                    time.sleep(cfg["stall_once"])
                    stall_at = None
                n = min(chunk, cut - sent)
                self.wfile.write(body[sent:sent + n])
                sent += n
                if rate:
                    ahead = sent / rate - (time.monotonic() - t0)
                    if ahead > 0:
                        time.sleep(ahead)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        if cut < len(body) or declared is not None:
            self.close_connection = True
        return sent

    def do_HEAD(self):
        self.do_GET(head=True)

    def do_GET(self, head=False):
        cfg = config()
        with lock:
            state["answers"] += 1
            answer = state["answers"] - 1
        if cfg.get("redirect_loop"):
            self.send_response(302)
            self.send_header("Location", self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            log("%s %s 302 0" % (self.command, self.path))
            return
        path = os.path.join(ROOT, self.path.split("?")[0].lstrip("/"))
        if not os.path.isfile(path):
            body = b"not found\n"
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)
            log("%s %s 404 0" % (self.command, self.path))
            return
        size, etag, read = self.content(path, cfg, answer)
        lastmod = self.date_time_string(int(os.stat(path).st_mtime) + (7 if "changed" in etag else 0))
        ranges = None
        rh = self.headers.get("Range")
        if rh and not cfg.get("ignore_range"):
            ranges = parse_ranges(rh, size)
            if_range = self.headers.get("If-Range")
            if if_range and if_range not in (etag, lastmod):
                ranges = None  # changed: the whole (new) file
        validators = [] if cfg.get("no_validators") else [("ETag", etag), ("Last-Modified", lastmod)]
        if ranges == []:
            self.send_response(416)
            self.send_header("Content-Range", "bytes */%d" % size)
            self.send_header("Content-Length", "0")
            self.end_headers()
            log("%s %s 416 0" % (self.command, self.path))
            return
        if ranges is None:
            status, body, headers = 200, read(0, size), [("Content-Type", "application/octet-stream")]
        elif len(ranges) == 1:
            a, b = ranges[0]
            status, body = 206, read(a, b)
            headers = [("Content-Type", "application/octet-stream"), ("Content-Range", "bytes %d-%d/%d" % (a, b - 1, size))]
        else:
            boundary = "fault%d" % answer
            parts = []
            for a, b in ranges:
                parts.append(("\r\n--%s\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes %d-%d/%d\r\n\r\n"
                              % (boundary, a, b - 1, size)).encode() + read(a, b))
            body = b"".join(parts) + ("\r\n--%s--\r\n" % boundary).encode()
            status, headers = 206, [("Content-Type", "multipart/byteranges; boundary=" + boundary)]
        declared = len(body) + cfg["short_length"] if cfg.get("short_length") else None
        self.send_response(status)
        for k, v in headers + validators:
            self.send_header(k, v)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(declared if declared is not None else len(body)))
        self.end_headers()
        sent = 0 if head else self.send_body(body, cfg, declared)
        log("%s %s %d %d" % (self.command, self.path, status, sent))


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
