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
    /// Runs when a client's claim on a device has ended (Release, or the client left).
    let afterClaim: @CoreActor () -> Void
    private(set) var connection: OpaquePointer?
    private(set) var authority: Authority?
    /// The device objects of the readers served, in the readers' order: the first is the default.
    private(set) var devices: [FprintDevice] = []
    /// Device objects of readers unplugged while claimed: exported until the claim ends, as fprintd
    /// keeps them until it closes the device.
    private var retired: [FprintDevice] = []
    /// fprintd numbers its device objects in the order it finds the readers: Device/0, Device/1…
    private var nextDeviceNumber = 0
    private var node: UnsafeMutablePointer<GDBusNodeInfo>?
    private var vtable = GDBusInterfaceVTable()
    private var registrations: [UInt32] = []
    private var ownerID: UInt32 = 0
    let ready = OneShot<Bool>()

    public init(core: Core, log: Logger, afterClaim: @escaping @CoreActor () -> Void = {}) {
        self.core = core
        self.log = log
        self.afterClaim = afterClaim
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
        authority = Authority(connection: connection) { [core] uid, line in
            core.clientLine(uid: uid, line, metadata: ["uid": "\(uid)"])
        }
        guard register(connection) else { return false }
        // Changes first, then the readers as they are: a reader unplugged in between is not missed.
        core.onReadersChanged { [weak self] infos in self?.readersChanged(infos) }
        let now = await core.readerDescriptions()
        for info in now where !devices.contains(where: { $0.info.deviceKey == info.deviceKey }) { export(info) }
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
        vtable.method_call = { _, _, path, interface, _, _, invocation, data in
            let service = Unmanaged<FprintService>.fromOpaque(data!).takeUnretainedValue()
            let path = String(cString: path!), interface = String(cString: interface!)
            CoreActor.assumeIsolated { service.dispatch(Invocation(invocation!), path: path, interface: interface) }
        }
        vtable.get_property = { _, _, path, _, property, _, data in
            let service = Unmanaged<FprintService>.fromOpaque(data!).takeUnretainedValue()
            let name = String(cString: property!), path = String(cString: path!)
            return CoreActor.assumeIsolated { service.device(at: path)?.property(name) }
        }
        for (path, interface) in [
            (FprintNames.manager, FprintNames.managerInterface), (FprintNames.root, FprintNames.objectManagerInterface),
        ] {
            guard let id = registerObject(path, interface) else { return false }
            registrations.append(id)
        }
        return true
    }

    private func registerObject(_ path: String, _ interface: String) -> UInt32? {
        guard let connection, let node else { return nil }
        var error: UnsafeMutablePointer<GError>?
        let info = tgg_dbus_node_info_lookup_interface(node, interface)
        let id = tgg_dbus_connection_register_object(
            connection, path, info, &vtable, Unmanaged.passUnretained(self).toOpaque(), nil, &error)
        guard id != 0 else {
            log.error("cannot register \(path): \(busError(error).message)")
            g_error_free(error)
            return nil
        }
        return id
    }

    // MARK: devices come and go

    func device(at path: String) -> FprintDevice? {
        devices.first { $0.path == path } ?? retired.first { $0.path == path }
    }

    /// The readers served changed: a reader's properties follow it; a reader unplugged takes its
    /// object off the bus (InterfacesRemoved; once released, if claimed); a new one gets an object
    /// (InterfacesAdded).
    private func readersChanged(_ infos: [ReaderInfo]) {
        for old in devices where !infos.contains(where: { $0.deviceKey == old.info.deviceKey }) {
            devices.removeAll { $0 === old }
            log.info("fingerprint reader \(old.info.name) gone from \(old.path)")
            if old.claim == nil { unexport(old) } else { old.gone = true; retired.append(old) }
        }
        for info in infos {
            if let same = devices.first(where: { $0.info.deviceKey == info.deviceKey }) {
                same.update(info)
            } else {
                export(info)
            }
        }
        // The default device is the first reader served, as the readers list them.
        let order = infos.map(\.deviceKey)
        devices.sort {
            (order.firstIndex(of: $0.info.deviceKey) ?? .max) < (order.firstIndex(of: $1.info.deviceKey) ?? .max)
        }
    }

    private func export(_ info: ReaderInfo) {
        let path = "\(FprintNames.devicePrefix)\(nextDeviceNumber)"
        nextDeviceNumber += 1
        guard let id = registerObject(path, FprintNames.deviceInterface) else { return }
        let new = FprintDevice(service: self, info: info, path: path, registration: id)
        devices.append(new)
        emit(
            "InterfacesAdded", path: FprintNames.root, interface: FprintNames.objectManagerInterface,
            [V.objectPath(path), interfaces(of: new)])
        log.info("fingerprint reader \(info.name) served as \(path)")
    }

    /// Takes a device's object off the bus (a claimed one once its claim has ended).
    func unexport(_ old: FprintDevice) {
        retired.removeAll { $0 === old }
        if let connection { _ = tgg_dbus_connection_unregister_object(connection, old.registration) }
        emit(
            "InterfacesRemoved", path: FprintNames.root, interface: FprintNames.objectManagerInterface,
            [V.objectPath(old.path), V.array("s", [V.string(FprintNames.deviceInterface)])])
    }

    private func interfaces(of device: FprintDevice) -> Variant {
        V.array("{sa{sv}}", [V.entry(V.string(FprintNames.deviceInterface), device.allProperties())])
    }

    private var exported: [FprintDevice] { devices + retired }

    private func dispatch(_ call: Invocation, path: String, interface: String) {
        switch (path, interface, call.method) {
        case (FprintNames.manager, _, "GetDevices"):
            call.reply([V.array("o", exported.map { V.objectPath($0.path) })])
        case (FprintNames.manager, _, "GetDefaultDevice"):
            if let first = devices.first { call.reply([V.objectPath(first.path)]) } else { call.fail(.noSuchDevice()) }
        case (FprintNames.root, _, "GetManagedObjects"):
            call.reply([
                V.array("{oa{sa{sv}}}", exported.map { V.entry(V.objectPath($0.path), interfaces(of: $0)) })
            ])
        case (_, FprintNames.deviceInterface, _):
            guard let device = device(at: path) else { return call.fail(.noSuchDevice()) }
            device.handle(call)
        default:
            call.fail(
                BusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "No such method \(call.method)"))
        }
    }

    /// Emits a signal of an object (to every listener, as fprintd does).
    func emit(_ signal: String, path: String, interface: String = FprintNames.deviceInterface, _ arguments: [Variant]) {
        guard let connection else { return }
        var error: UnsafeMutablePointer<GError>?
        if tgg_dbus_connection_emit_signal(
            connection, nil, path, interface, signal, V.tuple(arguments), &error) == 0
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

    /// Gives the name back and takes the objects off the bus.
    public func stop() {
        if ownerID != 0 { tgg_bus_unown_name(ownerID); ownerID = 0 }
        if let connection {
            for id in registrations + exported.map(\.registration) {
                _ = tgg_dbus_connection_unregister_object(connection, id)
            }
        }
        registrations = []
        devices = []
        retired = []
    }
}

/// The D-Bus front-end as a service.
extension FprintService: DaemonService {
    public nonisolated var serviceName: String { "fprintd D-Bus API" }

    public func start() async -> ServiceStart {
        if await serve() { return .running }
        // Nothing of it stays on the bus: its objects and name callbacks point at this service,
        // which goes when the group lets go of it.
        stop()
        return .unavailable("not served (said above)")
    }

    /// The core has told every prompt to end (systemCancel) before the services stop; each
    /// device's client hears its last VerifyStatus or EnrollStatus from the name it called before
    /// the name goes, within `lastWordMilliseconds`.
    public func shutdown() async {
        let late = OneShot<Void>()
        let timer = LoopTimer(after: Self.lastWordMilliseconds) { late.set(()) }
        for device in devices + retired {
            guard let action = device.action else { continue }
            if case .second = await firstOf(action.ended, late) { break }
        }
        timer.cancel()
        stop()
    }

    static let lastWordMilliseconds = 1000
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
