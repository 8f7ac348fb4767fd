#!/usr/bin/env python3
"""A webhook receiver written from the interface spec's "Events" section alone (branch hookrecv).

Standard library only: http.server, hmac, hashlib. What an integrator writes:

- reads the raw body bytes (Content-Length) and never re-serializes them;
- parses X-Service-Signature "t=<unix>,v1=<hex>" (several v1 values allowed, unknown versions ignored);
- rejects |now - t| > 300 s; recomputes HMAC-SHA256 hex of "<t>.<body>" with the secret and compares
  with hmac.compare_digest; answers 401 and ignores the event when verification fails (spec step 5);
- dedupes on X-Service-Webhook-Id (an event it answered 2xx for is not processed again);
- checks the headers and the body against the spec's tables and records every disagreement.

Control (the test drives it; not part of what an integrator writes): POST /_control with JSON
{"secrets": [current, older...], "answers": [200 | 500 | "redirect" | {"hold": true, "status": 200}, ...]}
or {"release": true} (answers every held request). A held request is processed (a 2xx one enters
the dedupe set) and then answered only on release: a slow receiver.
"secrets"[0] is the receiver's secret; the others are only checked to report which secret signed.
Every request to the hook path is reported as one JSON line on stdout. The first line is
{"listening": <port>}.
"""
import hashlib
import hmac
import json
import re
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_SECONDS = 300
EVENT_TYPES = {
    "comms.sent", "comms.failed", "comms.skipped", "comms.delivered", "comms.opened", "comms.bounced",
    "comms.dropped", "comms.spam_reported", "comms.unsubscribed", "comms.test",
}
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")

lock = threading.Lock()
state = {"secrets": [], "answers": []}
released = threading.Event()
processed = set()  # webhook ids answered 2xx: the dedupe set


def report(entry):
    with lock:
        sys.stdout.write(json.dumps(entry) + "\n")
        sys.stdout.flush()


def parse_signature(header):
    """t and the v1 digests of "t=...,v1=..."; (None, []) when unreadable."""
    t, v1 = None, []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            return None, []
        if key == "t":
            t = value
        elif key == "v1":
            v1.append(value)
        # other versions: unknown to this receiver, ignored (spec: Signature 3)
    if t is None or not t.isdigit():
        return None, []
    return int(t), v1


def signed_with(secret, t, body, digests):
    expected = hmac.new(secret.encode("utf-8"), str(t).encode("ascii") + b"." + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, d) for d in digests)


def verify(header, body, secrets, now):
    """(verdict for secrets[0] or the reason it failed, index of the secret that signed or None)."""
    if not header:
        return "no signature header", None
    t, digests = parse_signature(header)
    if t is None or not digests:
        return "unreadable signature header", None
    if any(not HEX64.match(d) for d in digests):
        return "v1 is not 64 lowercase hex characters", None
    signer = next((i for i, s in enumerate(secrets) if signed_with(s, t, body, digests)), None)
    if abs(now - t) > TOLERANCE_SECONDS:
        return "timestamp outside 300 s", signer
    if signer != 0:
        return "signature mismatch", signer
    return "ok", signer


def iso8601(value):
    if not isinstance(value, str) or not re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$", value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
        return True
    except ValueError:
        return False


def body_problems(headers, body):
    """Every disagreement between what arrived and the spec's headers and body tables."""
    problems = []
    content_type = headers.get("Content-Type")
    if content_type is None or content_type.split(";")[0].strip().lower() != "application/json":
        problems.append(f"Content-Type is {content_type!r}, not application/json")
    webhook_id = headers.get("X-Service-Webhook-Id")
    if not webhook_id or not UUID.match(webhook_id):
        problems.append(f"X-Service-Webhook-Id {webhook_id!r} is not a uuid")
    event_header = headers.get("X-Service-Event")
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        return problems + [f"body is not UTF-8 JSON: {error}"]
    if not isinstance(doc, dict):
        return problems + ["body is not a JSON object"]
    if not isinstance(doc.get("id"), str) or not UUID.match(doc["id"]):
        problems.append(f"id {doc.get('id')!r} is not a uuid string")
    elif doc["id"] != webhook_id:
        problems.append(f"id {doc['id']} differs from X-Service-Webhook-Id {webhook_id}")
    event_type = doc.get("type")
    if not isinstance(event_type, str) or event_type not in EVENT_TYPES:
        problems.append(f"type {event_type!r} is not one of the spec's event types")
    if event_header != event_type:
        problems.append(f"X-Service-Event {event_header!r} differs from the body's type {event_type!r}")
    if not iso8601(doc.get("createdAt")):
        problems.append(f"createdAt {doc.get('createdAt')!r} is not an ISO 8601 timestamp")
    data = doc.get("data")
    if not isinstance(data, dict):
        return problems + ["data is not an object"]
    for field in ("attendeeId", "templateId", "attendeeInvitationId"):
        if not isinstance(data.get(field), str) or not UUID.match(data[field]):
            problems.append(f"data.{field} {data.get(field)!r} is not a GUID string")
    status = data.get("status")
    if not isinstance(status, str) or not status:
        problems.append(f"data.status {status!r} is not a string")
    elif isinstance(event_type, str) and event_type != "comms." + status:
        problems.append(f"data.status {status!r} does not match type {event_type!r}")
    if "error" not in data:
        problems.append("data.error is missing (string or null)")
    elif data["error"] is not None and not isinstance(data["error"], str):
        problems.append(f"data.error {data['error']!r} is neither a string nor null")
    elif status in ("failed", "dropped") and not data["error"]:
        problems.append(f"data.error is not set for status {status}")
    elif status not in ("failed", "dropped") and data["error"] is not None:
        problems.append(f"data.error is set for status {status!r} (only failed or dropped)")
    if "correlationId" in data and not isinstance(data["correlationId"], str):
        problems.append(f"data.correlationId {data['correlationId']!r} is not a string")
    return problems


class Handler(BaseHTTPRequestHandler):
    # protocol_version stays the default HTTP/1.0 (one request per connection), as most receivers leave it.

    def log_message(self, *args):
        pass

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def answer(self, status, location=None):
        try:
            self.send_response(status)
            if location:
                self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_POST(self):
        body = self.read_body()
        if self.path == "/_control":
            command = json.loads(body)
            if command.pop("release", False):
                released.set()
            with lock:
                state.update(command)
            return self.answer(204)
        received = time.time()
        with lock:
            secrets = list(state["secrets"])
        header = self.headers.get("X-Service-Signature")
        verdict, signer = verify(header, body, secrets, int(received))
        t, _ = parse_signature(header or "")
        webhook_id = self.headers.get("X-Service-Webhook-Id")
        entry = {
            "receivedAt": received, "t": t, "verdict": verdict, "signer": signer,
            "webhookId": webhook_id, "event": self.headers.get("X-Service-Event"), "body": body.decode("utf-8", "replace"),
        }
        if verdict != "ok":
            # Spec, Signature 5: a receiver that fails verification returns 401 and ignores the event.
            entry.update(answered=401, problems=[], duplicate=False)
            report(entry)
            return self.answer(401)
        with lock:
            duplicate = webhook_id in processed
            plan = state["answers"].pop(0) if state["answers"] and not duplicate else 200
        entry.update(problems=body_problems(self.headers, body), duplicate=duplicate)
        hold = False
        if isinstance(plan, dict):
            hold, plan = plan.get("hold", False), plan.get("status", 200)
        if plan == "redirect":
            entry["answered"] = 307
            report(entry)
            return self.answer(307, location=self.path)
        if 200 <= plan < 300:
            with lock:
                processed.add(webhook_id)
        entry["answered"] = plan
        entry["held"] = hold
        if hold:
            released.clear()
        report(entry)
        if hold:
            released.wait()
        self.answer(plan)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    report({"listening": server.server_address[1]})
    server.serve_forever()


if __name__ == "__main__":
    main()
