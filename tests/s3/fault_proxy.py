#!/usr/bin/env python3
"""A fault-injecting HTTP proxy on loopback for the S3 tests.

    fault_proxy.py UPSTREAM_PORT PORT_FILE [--seed N] [--rate R]

Listens on a free port of 127.0.0.1 (written to PORT_FILE), forwards each
request to 127.0.0.1:UPSTREAM_PORT unchanged (the signature stays valid:
Host is kept) and, for a fraction R of the requests, picks one fault:
  delay     answer after 0.3 s
  drop      close the connection without an answer
  drop_late forward, then close without an answer (the request landed)
  truncate  send the headers and half of the body, then close
  503       answer 503 SlowDown without forwarding
  500       answer 500 InternalError without forwarding
Counts of each fault go to stderr at exit (SIGTERM).
"""
import http.client
import random
import signal
import socket
import socketserver
import sys
import threading
import time

upstream = int(sys.argv[1])
port_file = sys.argv[2]
seed = 1
rate = 0.3
args = sys.argv[3:]
while args:
    if args[0] == "--seed":
        seed = int(args[1])
    elif args[0] == "--rate":
        rate = float(args[1])
    args = args[2:]
rng = random.Random(seed)
lock = threading.Lock()
counts = {}
FAULTS = ["delay", "drop", "drop_late", "truncate", "503", "500"]


def pick():
    with lock:
        f = rng.choice(FAULTS) if rng.random() < rate else "none"
        counts[f] = counts.get(f, 0) + 1
        return f


def error_body(code, msg):
    return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s</Code>"
            "<Message>%s</Message></Error>" % (code, msg)).encode()


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline(65537)
        if not line:
            return
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers = []
        length = 0
        while True:
            h = self.rfile.readline(65537)
            if h in (b"\r\n", b"\n", b""):
                break
            name, _, value = h.decode("latin-1").partition(":")
            headers.append((name.strip(), value.strip()))
            if name.strip().lower() == "content-length":
                length = int(value.strip())
            if name.strip().lower() == "expect":
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = self.rfile.read(length) if length else b""
        fault = pick()
        if fault == "drop":
            return
        if fault in ("503", "500"):
            code = "SlowDown" if fault == "503" else "InternalError"
            b = error_body(code, "injected")
            self.wfile.write(("HTTP/1.1 %s Injected\r\nContent-Type: application/xml\r\n"
                              "Content-Length: %d\r\nConnection: close\r\n\r\n"
                              % (fault, len(b))).encode() + b)
            return
        if fault == "delay":
            time.sleep(0.3)
        conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=30)
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for n, v in headers:
            if n.lower() in ("connection", "expect"):
                continue
            conn.putheader(n, v)
        conn.endheaders(body)
        r = conn.getresponse()
        data = r.read() if method != "HEAD" else b""
        conn.close()
        if fault == "drop_late":
            return
        out = ["HTTP/1.1 %d %s\r\n" % (r.status, r.reason)]
        for n, v in r.getheaders():
            if n.lower() in ("connection", "transfer-encoding"):
                continue
            if n.lower() == "content-length" and method != "HEAD":
                continue
            out.append("%s: %s\r\n" % (n, v))
        if method != "HEAD":
            out.append("Content-Length: %d\r\n" % len(data))
        out.append("Connection: close\r\n\r\n")
        self.wfile.write("".join(out).encode("latin-1"))
        if fault == "truncate" and len(data) > 1:
            self.wfile.write(data[: len(data) // 2])
            return
        self.wfile.write(data)


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
import os
os.rename(port_file + ".tmp", port_file)


def stop(*_):
    sys.stderr.write("fault_proxy: %s\n" % sorted(counts.items()))
    sys.stderr.flush()
    os._exit(0)


signal.signal(signal.SIGTERM, stop)
srv.serve_forever()
