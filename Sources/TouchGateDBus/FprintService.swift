// fprintd's D-Bus API on the system bus, served by touchgated's core: GNOME, KDE, gdm, fprintd's
// tools and pam_fprintd talk to it unchanged; the policy behind it is touchgate's.
import CGIO
import CTouchGateLibs
import Logging
import TouchGateCore
import TouchGateReader

@CoreActor public final class FprintService {
    let core: Core
    let log: Logger
    private(set) var connection: OpaquePointer?
    private(set) var authority: Authority?
    private(set) var device: FprintDevice?
    private var node: UnsafeMutablePointer<GDBusNodeInfo>?
    private var registrations: [UInt32] = []
    private var ownerID: UInt32 = 0
    let ready = OneShot<Bool>()

    public init(core: Core, log: Logger) {
        self.core = core
        self.log = log
    }

    /// Connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS is honoured) without blocking the loop,
    /// registers the objects, then asks for the name. Without a bus, or when another service
    /// (fprintd) owns the name, the daemon goes on without this front-end and says so.
    func serve() async -> Bool {
        let (found, failure) = await SystemBus.connect()
        guard let connection = found else {
            log.info("fprintd D-Bus API not served: \(failure ?? "?")")
            return false
        }
        self.connection = connection
        authority = Authority(connection: connection) { [log] in log.notice("\($0)") }
        guard register(connection) else { return false }
        let info = await core.readerDescription()
        if let info {
            device = FprintDevice(service: self, info: info)
            core.onReaderInfoChanged { [weak self] info in self?.device?.update(info) }
        }
        ownerID = tgg_bus_own_name_on_connection(
            connection, FprintNames.bus, G_BUS_NAME_OWNER_FLAGS_DO_NOT_QUEUE,
            { _, _, data in
                let service = Unmanaged<FprintService>.fromOpaque(data!).takeUnretainedValue()
                CoreActor.assumeIsolated {
                    service.log.info("serving fprintd's D-Bus API as \(FprintNames.bus)")
                    service.ready.set(true)
                }
            },
            { _, _, data in
                let service = Unmanaged<FprintService>.fromOpaque(data!).takeUnretainedValue()
                CoreActor.assumeIsolated {
                    if !service.ready.isSet {
                        service.log.notice(
                            "\(FprintNames.bus) is owned by another service (fprintd?): its D-Bus API is not served")
                    } else {
                        service.log.error("lost the name \(FprintNames.bus)")
                    }
                    service.ready.set(false)
                }
            }, Unmanaged.passUnretained(self).toOpaque(), nil)
        return await ready.wait()
    }

    private func register(_ connection: OpaquePointer) -> Bool {
        var error: UnsafeMutablePointer<GError>?
        guard let node = tgg_dbus_node_info_new_for_xml(fprintIntrospection, &error) else {
            log.error("bad introspection data: \(busError(error).message)")
            g_error_free(error)
            return false
        }
        self.node = node
        var vtable = GDBusInterfaceVTable()
        vtable.method_call = { _, _, path, interface, _, _, invocation, data in
            let service = Unmanaged<FprintService>.fromOpaque(data!).takeUnretainedValue()
            let path = String(cString: path!), interface = String(cString: interface!)
            CoreActor.assumeIsolated { service.dispatch(Invocation(invocation!), path: path, interface: interface) }
        }
        vtable.get_property = { _, _, path, _, property, _, data in
            let service = Unmanaged<FprintService>.fromOpaque(data!).takeUnretainedValue()
            let name = String(cString: property!)
            return CoreActor.assumeIsolated { service.device?.property(name) }
        }
        let objects: [(String, String)] = [
            (FprintNames.manager, FprintNames.managerInterface),
            (FprintNames.root, FprintNames.objectManagerInterface),
            (FprintNames.device0, FprintNames.deviceInterface),
        ]
        for (path, interface) in objects {
            let info = tgg_dbus_node_info_lookup_interface(node, interface)
            let id = tgg_dbus_connection_register_object(
                connection, path, info, &vtable,
                Unmanaged.passUnretained(self).toOpaque(), nil, &error)
            guard id != 0 else {
                log.error("cannot register \(path): \(busError(error).message)")
                g_error_free(error)
                return false
            }
            registrations.append(id)
        }
        return true
    }

    private func dispatch(_ call: Invocation, path: String, interface: String) {
        switch (path, interface, call.method) {
        case (FprintNames.manager, _, "GetDevices"):
            call.reply([V.array("o", device == nil ? [] : [V.objectPath(FprintNames.device0)])])
        case (FprintNames.manager, _, "GetDefaultDevice"):
            if device == nil { call.fail(.noSuchDevice()) } else { call.reply([V.objectPath(FprintNames.device0)]) }
        case (FprintNames.root, _, "GetManagedObjects"):
            var objects: [Variant] = []
            if let device {
                let interfaces = V.array(
                    "{sa{sv}}", [V.entry(V.string(FprintNames.deviceInterface), device.allProperties())])
                objects.append(V.entry(V.objectPath(FprintNames.device0), interfaces))
            }
            call.reply([V.array("{oa{sa{sv}}}", objects)])
        case (FprintNames.device0, _, _):
            guard let device else { return call.fail(.noSuchDevice()) }
            device.handle(call)
        default:
            call.fail(
                BusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "No such method \(call.method)"))
        }
    }

    /// Emits a signal of the device (to every listener, as fprintd does).
    func emit(_ signal: String, interface: String = FprintNames.deviceInterface, _ arguments: [Variant]) {
        guard let connection else { return }
        var error: UnsafeMutablePointer<GError>?
        if tgg_dbus_connection_emit_signal(
            connection, nil, FprintNames.device0, interface, signal, V.tuple(arguments), &error) == 0
        {
            log.notice("cannot emit \(signal): \(busError(error).message)")
            g_error_free(error)
        }
    }

    /// Tells a sender's disappearance (it closed its connection: a client killed mid-enroll).
    func watch(_ sender: String, vanished: @escaping @CoreActor () -> Void) -> UInt32 {
        guard let connection else { return 0 }
        let box = Unmanaged.passRetained(VanishBox(vanished))
        return tgg_bus_watch_name_on_connection(
            connection, sender, G_BUS_NAME_WATCHER_FLAGS_NONE, nil,
            { _, _, data in
                let box = Unmanaged<VanishBox>.fromOpaque(data!).takeUnretainedValue()
                CoreActor.assumeIsolated { box.fire() }
            }, box.toOpaque(), { data in Unmanaged<VanishBox>.fromOpaque(data!).release() })
    }

    func unwatch(_ id: UInt32) { if id != 0 { tgg_bus_unwatch_name(id) } }

    /// Gives the name back and takes the objects off the bus. Prompts have already ended (the
    /// core's shutdown comes first), so every client has had its last signal.
    public func stop() {
        if ownerID != 0 { tgg_bus_unown_name(ownerID); ownerID = 0 }
        if let connection {
            for id in registrations { _ = tgg_dbus_connection_unregister_object(connection, id) }
        }
        registrations = []
    }
}

/// The D-Bus front-end as a service.
extension FprintService: DaemonService {
    public nonisolated var serviceName: String { "fprintd D-Bus API" }

    public func start() async -> ServiceStart {
        await serve() ? .running : .unavailable("not served (said above)")
    }

    public func shutdown() async { stop() }
}

private final class VanishBox: @unchecked Sendable {
    let vanished: @CoreActor () -> Void
    var fired = false
    init(_ vanished: @escaping @CoreActor () -> Void) { self.vanished = vanished }
    @CoreActor func fire() {
        guard !fired else { return }
        fired = true
        vanished()
    }
}
