// GDBus from Swift: variants in and out, method replies and errors, and async calls bridged to await.
import CGIO
import CTouchGateLibs
import TouchGateCore

/// A GVariant (floating ones are sunk by whatever takes them).
typealias Variant = OpaquePointer

/// A C pointer handed between the core loop's callbacks and the code awaiting them, always on the
/// loop thread; the wrapper only says so to the compiler.
struct Handle: @unchecked Sendable {
    let pointer: OpaquePointer
}

enum V {
    static func string(_ s: String) -> Variant { s.withCString { g_variant_new_string($0) } }
    static func objectPath(_ s: String) -> Variant { s.withCString { g_variant_new_object_path($0) } }
    static func bool(_ b: Bool) -> Variant { g_variant_new_boolean(b ? 1 : 0) }
    static func int32(_ i: Int32) -> Variant { g_variant_new_int32(i) }
    static func uint32(_ u: UInt32) -> Variant { g_variant_new_uint32(u) }
    static func boxed(_ v: Variant) -> Variant { g_variant_new_variant(v) }

    static func tuple(_ items: [Variant]) -> Variant {
        var items: [Variant?] = items
        return items.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
    }

    /// An array of `elementType` ("s", "o", "{sv}", …), which may be empty.
    static func array(_ elementType: String, _ items: [Variant]) -> Variant {
        let type = g_variant_type_new(elementType)
        defer { g_variant_type_free(type) }
        var items: [Variant?] = items
        return items.withUnsafeMutableBufferPointer { g_variant_new_array(type, $0.baseAddress, gsize($0.count)) }
    }

    static func entry(_ key: Variant, _ value: Variant) -> Variant { g_variant_new_dict_entry(key, value) }

    /// a{sv}
    static func vardict(_ pairs: [(String, Variant)]) -> Variant {
        array("{sv}", pairs.map { entry(string($0.0), boxed($0.1)) })
    }

    /// The string at `index` of a tuple, or nil when it is not one.
    static func stringArg(_ tuple: Variant?, _ index: Int) -> String? {
        guard let tuple, Int(g_variant_n_children(tuple)) > index,
            let child = g_variant_get_child_value(tuple, gsize(index))
        else { return nil }
        defer { g_variant_unref(child) }
        guard
            g_variant_is_of_type(child, g_variant_type_checked_("s")) != 0
                || g_variant_is_of_type(child, g_variant_type_checked_("o")) != 0,
            let text = g_variant_get_string(child, nil)
        else { return nil }
        return String(cString: text)
    }

    static func boolArg(_ tuple: Variant?, _ index: Int) -> Bool? {
        guard let tuple, Int(g_variant_n_children(tuple)) > index,
            let child = g_variant_get_child_value(tuple, gsize(index))
        else { return nil }
        defer { g_variant_unref(child) }
        guard g_variant_is_of_type(child, g_variant_type_checked_("b")) != 0 else { return nil }
        return g_variant_get_boolean(child) != 0
    }

    static func uint32Arg(_ tuple: Variant?, _ index: Int) -> UInt32? {
        guard let tuple, Int(g_variant_n_children(tuple)) > index,
            let child = g_variant_get_child_value(tuple, gsize(index))
        else { return nil }
        defer { g_variant_unref(child) }
        guard g_variant_is_of_type(child, g_variant_type_checked_("u")) != 0 else { return nil }
        return g_variant_get_uint32(child)
    }
}

/// A D-Bus error to answer a method call with: fprintd's names and a sentence.
struct BusError: Error, Sendable, Equatable {
    let name: String
    let message: String

    static let prefix = "net.reactivated.Fprint.Error."
    static func fprint(_ suffix: String, _ message: String) -> BusError {
        BusError(name: prefix + suffix, message: message)
    }
    static func claimDevice(_ m: String = "Device was not claimed before use") -> BusError { fprint("ClaimDevice", m) }
    static func alreadyInUse(_ m: String) -> BusError { fprint("AlreadyInUse", m) }
    static func internalError(_ m: String) -> BusError { fprint("Internal", m) }
    static func permissionDenied(_ m: String) -> BusError { fprint("PermissionDenied", m) }
    static func noEnrolledPrints(_ m: String) -> BusError { fprint("NoEnrolledPrints", m) }
    static func noActionInProgress(_ m: String) -> BusError { fprint("NoActionInProgress", m) }
    static func invalidFingername(_ m: String = "Invalid finger name") -> BusError { fprint("InvalidFingername", m) }
    static func noSuchDevice(_ m: String = "No devices available") -> BusError { fprint("NoSuchDevice", m) }
    static func printsNotDeleted(_ m: String) -> BusError { fprint("PrintsNotDeleted", m) }
    static func printsNotDeletedFromDevice(_ m: String) -> BusError { fprint("PrintsNotDeletedFromDevice", m) }
}

/// A method call in progress; answered exactly once (GDBus gives us the invocation to keep).
@CoreActor final class Invocation {
    private var handle: OpaquePointer?
    let sender: String
    let method: String
    let parameters: Variant?

    init(_ invocation: OpaquePointer) {
        handle = invocation
        sender = String(cString: tgg_dbus_method_invocation_get_sender(invocation))
        method = String(cString: tgg_dbus_method_invocation_get_method_name(invocation))
        parameters = tgg_dbus_method_invocation_get_parameters(invocation)
        if let parameters { g_variant_ref(parameters) }
    }

    isolated deinit {
        if let parameters { g_variant_unref(parameters) }
        if handle != nil { fail(.internalError("no answer")) }
    }

    func string(_ index: Int) -> String? { V.stringArg(parameters, index) }

    /// Answers with `values` (the out arguments; none for methods without).
    func reply(_ values: [Variant] = []) {
        guard let h = handle else { return }
        handle = nil
        tgg_dbus_method_invocation_return_value(h, V.tuple(values))
    }

    func fail(_ error: BusError) {
        guard let h = handle else { return }
        handle = nil
        tgg_dbus_method_invocation_return_dbus_error(h, error.name, error.message)
    }

    func answer(_ result: Result<[Variant], BusError>) {
        switch result {
        case .success(let values): reply(values)
        case .failure(let error): fail(error)
        }
    }
}

/// Calls a method on the bus without blocking the loop; the reply, or the error's name and message.
@CoreActor func busCall(
    _ connection: OpaquePointer, destination: String, path: String, interface: String,
    method: String, _ parameters: Variant?, timeoutMilliseconds: Int32
) async -> Result<Variant, BusError> {
    let done = OneShot<Result<Handle, BusError>>()
    let box = Unmanaged.passRetained(CallBox(done))
    tgg_dbus_connection_call(
        connection, destination, path, interface, method, parameters, nil,
        G_DBUS_CALL_FLAGS_NONE, timeoutMilliseconds, nil,
        { source, result, data in
            let box = Unmanaged<CallBox>.fromOpaque(data!).takeRetainedValue()
            var error: UnsafeMutablePointer<GError>?
            let reply = tgg_dbus_connection_call_finish(OpaquePointer(source), result, &error)
            let outcome: Result<Handle, BusError> =
                reply.map { .success(Handle(pointer: $0)) } ?? .failure(busError(error))
            if error != nil { g_error_free(error) }
            CoreActor.assumeIsolated { box.done.set(outcome) }
        }, box.toOpaque())
    return await done.wait().map(\.pointer)
}

final class CallBox: @unchecked Sendable {
    let done: OneShot<Result<Handle, BusError>>
    init(_ done: OneShot<Result<Handle, BusError>>) { self.done = done }
}

/// The D-Bus error name and message of a GError from a bus call.
func busError(_ error: UnsafeMutablePointer<GError>?) -> BusError {
    guard let error else { return BusError(name: "org.freedesktop.DBus.Error.Failed", message: "unknown error") }
    let message = error.pointee.message.map { String(cString: $0) } ?? ""
    if let remote = tgg_dbus_error_get_remote_error(error) {
        defer { g_free(remote) }
        return BusError(name: String(cString: remote), message: message)
    }
    return BusError(name: "org.freedesktop.DBus.Error.Failed", message: message)
}

/// The system bus (DBUS_SYSTEM_BUS_ADDRESS is honoured), reached without blocking the loop: GIO
/// loaded on first use, then GIO's shared connection. nil and why when there is none.
@CoreActor enum SystemBus {
    static func connect() async -> (connection: OpaquePointer?, failure: String?) {
        var missing: UnsafePointer<CChar>?
        guard tg_gio_load(&missing) else {
            return (nil, "cannot load GIO (\(missing.map { String(cString: $0) } ?? "?"))")
        }
        let connected = OneShot<Handle?>()
        let box = Unmanaged.passRetained(ConnectBox(connected))
        tgg_bus_get(
            G_BUS_TYPE_SYSTEM, nil,
            { _, result, data in
                let box = Unmanaged<ConnectBox>.fromOpaque(data!).takeUnretainedValue()
                var error: UnsafeMutablePointer<GError>?
                let connection = tgg_bus_get_finish(result, &error)
                let message = error.flatMap { $0.pointee.message.map { String(cString: $0) } }
                if error != nil { g_error_free(error) }
                CoreActor.assumeIsolated {
                    box.failure = message; box.done.set(connection.map(Handle.init))
                }
            }, box.toOpaque())
        let found = await connected.wait()?.pointer
        let failure = box.takeUnretainedValue().failure
        box.release()
        if let found { stopWhenClosed(found) }
        return found.map { ($0, nil) } ?? (nil, "no system bus (\(failure ?? "?"))")
    }

    private static var watched = false

    /// GIO's shared connection ends the process when the bus goes away by raising SIGTERM in the
    /// thread that sees it: the core loop's, where SIGTERM is blocked for main's sigwait, so it
    /// would never arrive and the daemon would go on without fprintd's API or the sleep inhibitor.
    /// The signal goes to the process instead, so the daemon stops in order (socket activation
    /// starts it again, with a new connection, at the next request).
    private static func stopWhenClosed(_ connection: OpaquePointer) {
        guard !watched else { return }
        watched = true
        tgg_dbus_connection_set_exit_on_close(connection, 0)
        let closed: @convention(c) (gpointer?, gboolean, gpointer?, gpointer?) -> Void = { _, _, _, _ in
            kill(getpid(), SIGTERM)
        }
        _ = g_signal_connect_data(
            UnsafeMutableRawPointer(connection), "closed", unsafeBitCast(closed, to: GCallback.self), nil, nil,
            GConnectFlags(rawValue: 0))
    }
}

private final class ConnectBox: @unchecked Sendable {
    let done: OneShot<Handle?>
    var failure: String?
    init(_ done: OneShot<Handle?>) { self.done = done }
}
