// Who a bus caller is (the bus's credentials, never the arguments) and what polkit lets them do.
import CGIO
import TouchGateCore

/// fprintd's polkit actions (its policy file names them; rules written for fprintd keep working).
enum FprintAction: String {
    case verify = "net.reactivated.fprint.device.verify"
    case enroll = "net.reactivated.fprint.device.enroll"
    case setUsername = "net.reactivated.fprint.device.setusername"
}

@CoreActor final class Authority {
    private let connection: OpaquePointer
    /// A line the caller (by uid) caused: a client can ask as often as it likes.
    private let log: (UInt32, String) -> Void
    /// uid per unique bus name: a unique name is never reused, so its uid never changes.
    private var uids: [String: UInt32] = [:]
    /// How long an interactive polkit check may take (an agent asking a password) before it is
    /// given up as refused; other callers never wait on it.
    static let polkitDeadlineMilliseconds: Int32 = 120_000

    init(connection: OpaquePointer, log: @escaping (UInt32, String) -> Void) {
        self.connection = connection
        self.log = log
    }

    /// The caller's uid and pid, from the bus daemon (GetConnectionUnixUser / ProcessID).
    func caller(_ sender: String) async -> Result<Caller, BusError> {
        if let uid = uids[sender] { return .success(Caller(uid: uid, pid: 0)) }
        let reply = await busCall(
            connection, destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", method: "GetConnectionUnixUser",
            V.tuple([V.string(sender)]), timeoutMilliseconds: 5000)
        switch reply {
        case .failure(let e):
            return .failure(.internalError("Could not get connection unix user ID: \(e.message)"))
        case .success(let v):
            defer { g_variant_unref(v) }
            guard let uid = V.uint32Arg(v, 0) else {
                return .failure(.internalError("bad GetConnectionUnixUser reply"))
            }
            if uids.count > 4096 { uids.removeAll() }
            uids[sender] = uid
            return .success(Caller(uid: uid, pid: 0))
        }
    }

    func forget(_ sender: String) { uids[sender] = nil }

    enum Check: Equatable {
        case allowed
        case denied(String)
        /// No polkit on this bus: docs/spec.md §5's rules decide.
        case noAuthority
    }

    /// polkit's answer for `action`, allowing interaction (an agent may ask the user's password),
    /// asked for every caller, root included, as fprintd asks it: the site's polkit decides.
    func check(_ action: FprintAction, sender: String, caller: Caller) async -> Check {
        let subject = V.tuple([V.string("system-bus-name"), V.vardict([("name", V.string(sender))])])
        let parameters = V.tuple([subject, V.string(action.rawValue), V.array("{ss}", []), V.uint32(1), V.string("")])
        let reply = await busCall(
            connection, destination: "org.freedesktop.PolicyKit1",
            path: "/org/freedesktop/PolicyKit1/Authority",
            interface: "org.freedesktop.PolicyKit1.Authority", method: "CheckAuthorization",
            parameters, timeoutMilliseconds: Self.polkitDeadlineMilliseconds)
        switch reply {
        case .failure(let e)
        where e.name == "org.freedesktop.DBus.Error.ServiceUnknown"
            || e.name == "org.freedesktop.DBus.Error.NameHasNoOwner":
            return .noAuthority
        case .failure(let e):
            log(caller.uid, "polkit check of \(action.rawValue) failed: \(e.name): \(e.message)")
            return .denied("Not Authorized: \(e.message)")
        case .success(let v):
            defer { g_variant_unref(v) }
            guard let result = g_variant_get_child_value(v, 0) else {
                return .denied("Not Authorized: bad polkit reply")
            }
            defer { g_variant_unref(result) }
            return V.boolArg(result, 0) == true ? .allowed : .denied("Not Authorized: \(action.rawValue)")
        }
    }
}
