"""A D-Bus client for the tests, driven by JSON lines: one connection to the system bus (the
test's private one, from DBUS_SYSTEM_BUS_ADDRESS), calls made without blocking, every signal seen.

Run by Debian's /usr/bin/python3 (it has GLib's introspection bindings), as root or as a test user,
so the bus sees that process's uid. Requests on stdin, one JSON object a line:
  {"id": 1, "op": "call", "dest": …, "path": …, "iface": …, "method": …, "sig": "s", "args": [...],
   "timeout_ms": 25000}
  {"id": 2, "op": "own", "name": …}          RequestName with DO_NOT_QUEUE; replies the result code
  {"id": 3, "op": "wait_name", "name": …}    replies once the name has an owner
Answers on stdout, one JSON object a line, flushed:
  {"ready": ":1.5"}
  {"id": 1, "ok": [...]}  or  {"id": 1, "error": "org.freedesktop.DBus.Error.…", "message": "…"}
  {"signal": "VerifyStatus", "iface": …, "path": …, "sender": …, "args": [...]}
stdin closing ends it.
"""

import json
import os
import sys

from gi.repository import Gio, GLib


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def error_of(err):
    name = Gio.DBusError.get_remote_error(err) or "org.freedesktop.DBus.Error.Failed"
    prefix = "GDBus.Error:%s: " % name  # what GDBus puts before a remote error's own message
    message = err.message[len(prefix):] if err.message.startswith(prefix) else err.message
    return {"error": name, "message": message}


def variants(value):
    """JSON arguments as GLib values: {"variant": [sig, value]} becomes a boxed variant (for "av")."""
    if isinstance(value, dict) and set(value) == {"variant"}:
        sig, inner = value["variant"]
        return GLib.Variant(sig, variants(inner))
    if isinstance(value, list):
        return [variants(v) for v in value]
    return value


def plain(value):
    """GVariant contents as JSON (byte strings as lists, tuples as lists)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


class Client:
    def __init__(self):
        self.bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
        self.loop = GLib.MainLoop()
        self.name_waits = {}  # name -> [request id]
        self.unread = b""  # input read but not yet a whole line
        self.bus.signal_subscribe(None, None, None, None, None, Gio.DBusSignalFlags.NONE, self.on_signal)
        channel = GLib.IOChannel.unix_new(sys.stdin.fileno())
        GLib.io_add_watch(channel, GLib.PRIORITY_DEFAULT, GLib.IOCondition.IN | GLib.IOCondition.HUP, self.on_input)
        say({"ready": self.bus.get_unique_name()})

    def on_signal(self, _bus, sender, path, iface, member, params):
        if iface == "org.freedesktop.DBus" and member == "NameOwnerChanged":
            name, _old, new = params.unpack()
            if new and name in self.name_waits:
                for rid in self.name_waits.pop(name):
                    say({"id": rid, "ok": [new]})
            return
        if iface == "org.freedesktop.DBus":
            return
        say({"signal": member, "iface": iface, "path": path, "sender": sender, "args": plain(params.unpack())})

    def on_input(self, _channel, _condition):
        # Every whole line read, not one: a buffered readline would keep a second request that came
        # in the same read until more input woke the watch again.
        chunk = os.read(sys.stdin.fileno(), 65536)
        if not chunk:
            self.loop.quit()
            return False
        self.unread += chunk
        while b"\n" in self.unread:
            line, self.unread = self.unread.split(b"\n", 1)
            request = json.loads(line)
            try:
                getattr(self, "op_" + request["op"])(request)
            except Exception as e:  # a request this client cannot make is answered, never dropped
                say({"id": request.get("id"), "error": "harness.BadRequest", "message": repr(e)})
        return True

    def call(self, rid, dest, path, iface, method, params, timeout_ms=25000, flags=Gio.DBusCallFlags.NONE):
        def done(bus, result):
            try:
                reply = bus.call_finish(result)
                say({"id": rid, "ok": plain(reply.unpack()) if reply is not None else []})
            except GLib.Error as err:
                say(dict(id=rid, **error_of(err)))
        self.bus.call(dest, path, iface, method, params, None, flags, timeout_ms, None, done)

    def op_call(self, r):
        sig = r.get("sig", "")
        params = GLib.Variant("(%s)" % sig, tuple(variants(r.get("args", [])))) if sig else None
        flags = Gio.DBusCallFlags.ALLOW_INTERACTIVE_AUTHORIZATION if r.get("interactive") else Gio.DBusCallFlags.NONE
        self.call(r["id"], r["dest"], r["path"], r["iface"], r["method"], params, r.get("timeout_ms", 25000), flags)

    def op_own(self, r):
        self.call(r["id"], "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                  GLib.Variant("(su)", (r["name"], 4)))  # 4: DBUS_NAME_FLAG_DO_NOT_QUEUE

    def op_wait_name(self, r):
        rid, name = r["id"], r["name"]
        self.name_waits.setdefault(name, []).append(rid)

        def done(bus, result):
            try:
                owner = bus.call_finish(result).unpack()[0]
            except GLib.Error:
                return  # no owner yet: NameOwnerChanged will say when
            if rid in self.name_waits.get(name, []):
                self.name_waits[name].remove(rid)
                say({"id": rid, "ok": [owner]})
        # Subscribed before asking, so an owner arriving in between is not missed.
        self.bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
                      GLib.Variant("(s)", (name,)), None, Gio.DBusCallFlags.NONE, -1, None, done)


if __name__ == "__main__":
    Client().loop.run()
