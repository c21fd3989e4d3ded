// What a front-end asks the core and what it gets back: typed values, whatever door they came through.
import TouchGateReader
import TouchGateWire

/// Who is asking, as the kernel or the bus reports it — the only source of authorization.
public struct Caller: Sendable, Equatable {
    /// The effective uid (SO_PEERCRED, or the bus's GetConnectionUnixUser).
    public var uid: UInt32
    public var pid: Int32
    /// What the desktop's authority (polkit) granted this caller for this request, when a
    /// front-end asked it: only ever widens docs/spec.md §5's rules as polkit's own rules say.
    public var grants: Set<Grant> = []
    public var isRoot: Bool { uid == 0 }
    public init(uid: UInt32, pid: Int32, grants: Set<Grant> = []) {
        self.uid = uid; self.pid = pid; self.grants = grants
    }

    public enum Grant: Sendable, Hashable {
        /// polkit's setusername: may act on another user's prints.
        case actForOthers
        /// polkit's enroll (auth_self_keep by default: the agent asked the password).
        case changePrints
    }
}

/// Where a request came from, for events and audit (values supplied by the client: escaped there).
public struct Origin: Sendable, Equatable {
    public var service: String?
    public var tty: String?
    public var rhost: String?
    public init(service: String? = nil, tty: String? = nil, rhost: String? = nil) {
        self.service = service; self.tty = tty; self.rhost = rhost
    }
}

public struct EvaluateRequest: Sendable {
    public var user: String
    public var policy: EvaluationPolicy
    public var origin: Origin
    /// Per-request limits; they may only tighten the daemon's.
    public var maxTries: Int?
    public var timeoutSeconds: Int?
    /// The prompt waits for a finger until it is ended (its client stops it or leaves, the reader
    /// goes, the machine sleeps or the daemon stops), without the daemon's `timeout`: fprintd's
    /// VerifyStart (docs/spec.md §6). `timeoutSeconds` is then ignored.
    public var untimed: Bool
    /// The client takes no input (GDM style): it cannot ask for a password afterwards.
    public var noInput: Bool
    /// The client reads no keys during the prompt (no terminal); it may still ask a password after it.
    public var noTerminal: Bool
    /// Only these fingers (fprintd's VerifyStart with a finger name); nil: any enrolled finger.
    public var fingers: [Finger]?
    /// After a match, the user's sealed login password is wanted (pam_touchgate's authtok).
    public var wantAuthtok: Bool
    /// The reader this request is for (PAM's device=, the CLI's --device, a D-Bus device object's
    /// DRIVER/DEVICE-ID: ReaderInfo.matches); nil: the default one. When no reader it names is
    /// served by the time its turn comes, the request ends as for a removed one.
    public var reader: String?
    public init(
        user: String, policy: EvaluationPolicy, origin: Origin = Origin(), maxTries: Int? = nil,
        timeoutSeconds: Int? = nil, untimed: Bool = false, noInput: Bool = false, noTerminal: Bool = false,
        fingers: [Finger]? = nil, wantAuthtok: Bool = false, reader: String? = nil
    ) {
        self.user = user; self.policy = policy; self.origin = origin; self.maxTries = maxTries
        self.timeoutSeconds = timeoutSeconds; self.untimed = untimed; self.noInput = noInput
        self.noTerminal = noTerminal; self.fingers = fingers; self.wantAuthtok = wantAuthtok; self.reader = reader
    }
}

/// An answer: a code (0 or an LAError number, or touchgate's own), a machine reason, a sentence,
/// and the values some requests return.
public struct Reply: Error, Sendable, Equatable {
    public var outcome: Outcome
    public var reason: Reason?
    public var text: Text?
    public var seconds: Int?
    /// deviceOwnerAuthentication: the client should ask for the password now (VERIFY_PASSWORD).
    public var askPassword = false
    /// The answer judges a password the daemon checked (verified, or wrong), not a fingerprint.
    public var byPassword = false
    public var fingers: [Finger] = []
    public var devices: [String] = []
    public var domainState: String?
    public var json: String?
    /// The user's sealed login password, released after a match (docs/spec.md §12).
    public var authtok: SecretText?

    public init(_ outcome: Outcome, reason: Reason? = nil, text: Text? = nil, seconds: Int? = nil) {
        self.outcome = outcome; self.reason = reason; self.text = text; self.seconds = seconds
    }

    public init(outcome: Outcome, reason: Reason?, text: Text?, seconds: Int? = nil) {
        self.init(outcome, reason: reason, text: text, seconds: seconds)
    }

    public static func success(_ text: Text? = nil, reason: Reason? = nil) -> Reply {
        Reply(.success, reason: reason, text: text)
    }

    public var isSuccess: Bool { outcome == .success }

    /// A password the daemon checked and accepted (reason `password` kept for older clients).
    public static var passwordVerified: Reply {
        var r = Reply.success(.passwordAccepted, reason: .password)
        r.byPassword = true
        return r
    }
}

/// A refusal as the client sees it: code, machine reason, sentence, seconds left.
public typealias Refusal = Reply

/// What a prompt shows while it runs.
public struct ProgressEvent: Sendable, Equatable {
    public var kind: ProgressKind
    public var style: MessageStyle
    public var text: Text?
    public var stage: Int?
    public var stages: Int?
    /// A prompt (or its place in the queue) at which a typed password is taken and checked by the daemon.
    public var acceptsPassword = false
    public init(_ kind: ProgressKind, _ text: Text?, style: MessageStyle = .info, stage: Int? = nil, stages: Int? = nil)
    {
        self.kind = kind; self.text = text; self.style = style; self.stage = stage; self.stages = stages
    }
}

/// The client side of a running prompt: where progress goes. Front-ends implement it.
@CoreActor public protocol PromptClient: AnyObject, Sendable {
    func show(_ progress: ProgressEvent)
}

/// What a person does at a running prompt, delivered by the front-end.
@CoreActor public final class PromptInput {
    public enum Event: Sendable, Equatable {
        /// The client cancelled this request (appCancel).
        case cancel
        /// The password typed at the prompt (policy biometrics-or-password).
        case password(String)
    }

    let events = OneShot<Event>()
    /// Whether the running prompt takes a typed password: set by the core when the prompt starts,
    /// so a front-end passes `.password` on only then (and refuses it as out of place otherwise).
    public internal(set) var acceptsPassword = false
    public init() {}

    /// The first event counts; later ones are ignored (a prompt ends once).
    public func deliver(_ event: Event) { events.set(event) }

    /// Whether the client already cancelled or answered.
    public var isDelivered: Bool { events.isSet }
}
