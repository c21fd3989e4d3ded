// One client connection: reads requests, checks the peer's rights, runs prompts and enrollments.
import Foundation
import Glibc
import Logging
import Synchronization
import TouchGatePolicy
import TouchGateReader
import CTouchGateWire
import TouchGateWire

/// What other threads (the reader, the arbiter) tell a session; it handles them on its own thread.
enum SessionEvent: Sendable {
    case granted
    case retry(RetryHint)
    case scanned(Result<ScanResult, ReaderFailure>)
    case enrollProgress(EnrollEvent)
    case enrolled(Result<[UInt8], ReaderFailure>)
    case passwordChecked(Daemon.PasswordOutcome)
    case monitorEvent(String)
}

/// How a wait on the reader ended from the client's side.
enum ClientState: Equatable {
    case present
    case cancelled   // sent CANCEL for this request
    case gone        // closed the connection
    case typedPassword(String)  // sent PASSWORD for this request (policy biometrics-or-password)
}

final class Session: @unchecked Sendable {
    let daemon: Daemon
    let connection: Connection
    let peer: PeerCredentials
    let peerName: String?
    private let wake = WakePipe()
    private let mailbox = Mutex<[SessionEvent]>([])
    var log: Logger

    /// A connection waiting for its next request is closed after this long.
    static let idleMilliseconds = 30_000

    init(daemon: Daemon, connection: Connection, peer: PeerCredentials) {
        self.daemon = daemon
        self.connection = connection
        self.peer = peer
        self.peerName = Accounts.name(uid: peer.uid)
        var log = daemon.log
        log[metadataKey: "peer"] = "uid=\(peer.uid) pid=\(peer.pid)"
        self.log = log
    }

    func post(_ event: SessionEvent) {
        mailbox.withLock { $0.append(event) }
        wake.wake()
    }

    // MARK: request loop

    func run() {
        defer { connection.close() }
        while true {
            let frame: Frame
            do {
                frame = try connection.receive(deadlineMilliseconds: Self.idleMilliseconds)
            } catch .wire(let error) {
                log.notice("malformed request: \(error)")
                reply(UInt32.max, .badRequest, .badRequest)
                return
            } catch {
                return  // closed, idle too long, or socket error: nothing to answer
            }
            guard frame.kind.isRequest, frame.kind != .password else {
                reply(frame.requestID, .badRequest, .badRequest)
                return
            }
            do {
                guard try handle(frame) else { return }
            } catch {
                log.notice("bad \(frame.kind) request: \(error)")
                reply(frame.requestID, .badRequest, .badRequest)
                return
            }
        }
    }

    /// Handles one request; false closes the connection.
    private func handle(_ frame: Frame) throws(WireError) -> Bool {
        let language = Language(locale: frame.string(.locale))
        switch frame.kind {
        case .canEvaluate:
            let user = try frame.requireString(.user)
            guard let policy = EvaluationPolicy(rawValue: try frame.requireInt(.policy)) else { throw .wrongType(.policy) }
            guard authorizeSelfOrRoot(frame, user: user, language) else { return true }
            if let refusal = daemon.preflight(user: user, policy: policy, rhost: frame.string(.rhost)) {
                reply(frame.requestID, refusal, language)
            } else {
                reply(frame.requestID, .success, nil, language)
            }
            return true
        case .evaluate:
            return try evaluate(frame, language)
        case .enroll:
            return try enroll(frame, language)
        case .list:
            let user = try frame.requireString(.user)
            guard authorizeSelfOrRoot(frame, user: user, language) else { return true }
            send(Frame(.result, requestID: frame.requestID,
                       [Field(.code, 0)] + daemon.store.fingers(of: user).map { Field(.finger, $0.rawValue) }))
            return true
        case .delete:
            return try delete(frame, language)
        case .devices:
            let devices = daemon.reader.info.map { ["\($0.name) (\($0.driver))"] } ?? []
            send(Frame(.result, requestID: frame.requestID, [Field(.code, 0)] + devices.map { Field(.device, $0) }))
            return true
        case .cancel:
            // Nothing is running on this connection: the context is already finished.
            reply(frame.requestID, .invalidContext, nil, language)
            return true
        case .status:
            let user = try frame.requireString(.user)
            guard authorizeSelfOrRoot(frame, user: user, language) else { return true }
            send(Frame(.result, requestID: frame.requestID, [Field(.code, 0), Field(.json, statusJSON(user))]))
            return true
        case .enable:
            let user = try frame.requireString(.user)
            guard authorizeWithPassword(frame, user: user, language) else { return true }
            return adminChange(frame, user: user, action: "enable", language) { [daemon] in daemon.policyEngine.enable($0) }
        case .disable:
            let user = try frame.requireString(.user)
            guard authorizeSelfOrRoot(frame, user: user, language) else { return true }
            return adminChange(frame, user: user, action: "disable", language) { [daemon] in daemon.policyEngine.disable($0) }
        case .lock:
            let user = try frame.requireString(.user)
            guard authorizeRoot(frame, user: user, language) else { return true }
            return adminChange(frame, user: user, action: "lock", language) { [daemon] in daemon.policyEngine.adminLock($0) }
        case .reset:
            let user = try frame.requireString(.user)
            guard authorizeRoot(frame, user: user, language) else { return true }
            return adminChange(frame, user: user, action: "reset", language) { [daemon] in daemon.policyEngine.reset($0) }
        case .domainState:
            let user = try frame.requireString(.user)
            guard authorizeSelfOrRoot(frame, user: user, language) else { return true }
            var fields = [Field(.code, 0)]
            // Absent when there are no prints or no biometrics (SPEC §4).
            if daemon.reader.info != nil,
               let value = daemon.domainKey.domainState(service: frame.string(.service) ?? "", prints: daemon.store.prints(of: user)) {
                fields.append(Field(.domainState, value))
            }
            send(Frame(.result, requestID: frame.requestID, fields))
            return true
        case .monitor:
            return monitor(frame, language)
        case .verifyPassword:
            // deviceOwnerAuthentication's password step: the user themself (a screen locker) or root.
            let user = try frame.requireString(.user)
            let password = try frame.requireString(.password)
            guard authorizeSelfOrRoot(frame, user: user, language) else { return true }
            let ctx = context(frame, user: user)
            switch checkPassword(frame.requestID, ctx, password) {
            case nil: return false
            case .correct?:
                daemon.publishOutcome(ctx, method: "password", outcome: .success, reason: nil)
                reply(frame.requestID, .success, .passwordAccepted, language, reason: "password")
            case .refused(let refusal)?:
                reply(frame.requestID, refusal, language)  // already published by verifyPassword
            }
            return true
        case .passwordSuccess:
            // Only root callers (sudo, login, su run the PAM stack as root) may vouch for a password.
            let user = try frame.requireString(.user)
            guard authorizeRoot(frame, user: user, language) else { return true }
            var ctx = context(frame, user: user)
            ctx.service = frame.string(.service)
            do { try daemon.recordPasswordSuccess(ctx) } catch {
                log.error("cannot record password success: \(error)")
                reply(frame.requestID, .internalError, .internalError, language)
                return true
            }
            daemon.publishOutcome(ctx, method: "password", outcome: .success, reason: "pamStack")
            reply(frame.requestID, .success, nil, language)
            return true
        default:
            reply(frame.requestID, .badRequest, .badRequest, language)
            return true
        }
    }

    private func context(_ frame: Frame, user: String) -> RequestContext {
        RequestContext(user: user, service: frame.string(.service), tty: frame.string(.tty),
                       rhost: frame.string(.rhost), policy: frame.int(.policy).flatMap(EvaluationPolicy.init(rawValue:)),
                       byUID: peer.uid)
    }

    private func adminChange(_ frame: Frame, user: String, action: String, _ language: Language,
                             _ change: @escaping (UserState) -> UserState) -> Bool {
        do { try daemon.adminChange(context(frame, user: user), action: action, change) } catch {
            log.error("cannot change state: \(error)")
            reply(frame.requestID, .internalError, .internalError, language)
            return true
        }
        log.notice("\(action)", metadata: ["user": "\(user)"])
        reply(frame.requestID, .success, nil, language)
        return true
    }

    private func statusJSON(_ user: String) -> String {
        var doc: [String: Any] = ["user": user, "fingers": daemon.store.fingers(of: user).map(\.rawValue)]
        let env = daemon.environment(for: user)
        switch daemon.states.load(user) {
        case .corrupt:
            doc["stateReadable"] = false
        case .state(let s):
            doc["stateReadable"] = true
            doc["enabled"] = s.enabled
            doc["failedMatches"] = s.consecutiveFailedMatches
            doc["lockedOut"] = s.biometryLockedOut
            doc["adminLocked"] = s.adminLocked
            doc["wrongPasswords"] = s.consecutiveWrongPasswords
            doc["passwordRequired"] = daemon.policyEngine.passwordRequiredReasons(s, in: env).map(\.rawValue)
            if case .refused(.backoff(let left)) = daemon.policyEngine.canAttemptPassword(s, at: env.now) {
                doc["backoffSecondsLeft"] = left
            } else {
                doc["backoffSecondsLeft"] = 0
            }
            if let t = s.lastPasswordSuccess { doc["lastPasswordSuccess"] = t }
            if let t = s.lastFingerprintSuccess { doc["lastFingerprintSuccess"] = t }
        }
        let refusal = daemon.preflight(user: user, policy: .biometrics, rhost: nil)
        doc["canEvaluate"] = refusal.map { ["code": Int($0.outcome.rawValue), "name": $0.outcome.name, "reason": $0.reason ?? ""] as [String: Any] }
            ?? ["code": 0, "name": "success", "reason": ""]
        let data = (try? JSONSerialization.data(withJSONObject: doc, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// Streams events until the client leaves: root may watch everyone (or one user), a user only themself.
    private func monitor(_ frame: Frame, _ language: Language) -> Bool {
        let rid = frame.requestID
        let wanted = frame.string(.user)
        let filter: String?
        if peer.isRoot {
            filter = wanted
        } else {
            guard let me = peerName, wanted == nil || wanted == me else {
                reply(rid, .notPermitted, .notPermitted, language)
                return true
            }
            filter = me
        }
        let id = daemon.events.subscribe(user: filter) { [self] json in post(.monitorEvent(json)) }
        defer { daemon.events.unsubscribe(id) }
        reply(rid, .success, nil, language)
        _ = pump(rid, nil, acceptPassword: false) { event in
            if case .monitorEvent(let json) = event {
                send(Frame(.event, requestID: rid, [Field(.json, json)]))
            }
            return false
        }
        return false
    }

    // MARK: authorization (SPEC §5, from SO_PEERCRED only)

    /// Root, or the user themself; answers notPermitted / userUnknown otherwise.
    private func authorizeSelfOrRoot(_ frame: Frame, user: String, _ language: Language) -> Bool {
        guard Accounts.isValidName(user) else {
            reply(frame.requestID, .userUnknown, .userUnknown(user), language)
            return false
        }
        guard peer.isRoot || peerName == user else {
            log.notice("refused \(frame.kind) for another user", metadata: ["user": "\(user)"])
            reply(frame.requestID, .notPermitted, .notPermitted, language)
            return false
        }
        guard Accounts.uid(name: user) != nil else {
            reply(frame.requestID, .userUnknown, .userUnknown(user), language)
            return false
        }
        return true
    }

    /// Lock, reset, password-success reports: root only.
    private func authorizeRoot(_ frame: Frame, user: String, _ language: Language) -> Bool {
        guard authorizeSelfOrRoot(frame, user: user, language) else { return false }
        guard peer.isRoot else {
            log.notice("refused \(frame.kind): needs root", metadata: ["user": "\(user)"])
            reply(frame.requestID, .notPermitted, .notPermitted, language)
            return false
        }
        return true
    }

    /// Enroll, delete, enable change what unlocks an account: root, or the user with their password
    /// (checked here, with back-off, and counted as a password success).
    private func authorizeWithPassword(_ frame: Frame, user: String, _ language: Language) -> Bool {
        guard authorizeSelfOrRoot(frame, user: user, language) else { return false }
        if peer.isRoot { return true }
        guard let password = frame.string(.password) else {
            reply(frame.requestID, .notPermitted, .passwordNeeded, language, reason: "passwordNeeded")
            return false
        }
        switch checkPassword(frame.requestID, context(frame, user: user), password) {
        case .correct?: return true
        case .refused(let refusal)?: reply(frame.requestID, refusal, language); return false
        case nil: return false  // the client left
        }
    }

    /// Runs the PAM password check off this thread so keepalives keep flowing; nil if the client left.
    private func checkPassword(_ rid: UInt32, _ ctx: RequestContext, _ password: String) -> Daemon.PasswordOutcome? {
        let daemon = self.daemon
        Thread.detachNewThread { [self] in post(.passwordChecked(daemon.verifyPassword(ctx, password))) }
        var outcome: Daemon.PasswordOutcome?
        let client = pump(rid, nil, acceptPassword: false) { event in
            if case .passwordChecked(let o) = event { outcome = o }
            return outcome != nil
        }
        return client == .present ? outcome : nil
    }

    // MARK: evaluate

    private func evaluate(_ frame: Frame, _ language: Language) throws(WireError) -> Bool {
        let rid = frame.requestID
        let user = try frame.requireString(.user)
        guard let policy = EvaluationPolicy(rawValue: try frame.requireInt(.policy)) else { throw .wrongType(.policy) }
        guard authorizeSelfOrRoot(frame, user: user, language) else { return true }
        let ctx = context(frame, user: user)
        var log = self.log
        log[metadataKey: "user"] = "\(user)"
        log[metadataKey: "service"] = "\(ctx.service ?? "-")"
        // deviceOwnerAuthentication: a refused or failed fingerprint is followed by the password,
        // which the module asks for and sends back in VERIFY_PASSWORD (not when it takes no input).
        let offersPassword = policy == .biometricsOrPassword && (frame.int(.flags) ?? 0) & Int32(TG_FLAG_NO_INPUT) == 0
        func finish(_ refusal: Refusal, method: String?) -> Bool {
            daemon.publishOutcome(ctx, method: method, outcome: refusal.outcome, reason: refusal.reason)
            reply(rid, offersPassword ? daemon.offeringPassword(refusal, user: user) : refusal, language)
            return true
        }
        if let refusal = daemon.preflight(user: user, policy: policy, rhost: ctx.rhost) {
            log.info("evaluate refused: \(refusal.outcome.name) \(refusal.reason ?? "")")
            return finish(refusal, method: nil)
        }
        // Per-request limits may only tighten the daemon's.
        let maxTries = min(daemon.config.maxTries, frame.int(.maxTries).map { Int(max(1, $0)) } ?? Int.max)
        let timeout = Int(min(daemon.config.timeout, frame.int(.timeout).map { Int64(max(1, $0)) } ?? Int64.max))
        let acceptPassword = policy == .biometricsOrPassword

        guard let ticket = acquireReader(rid, language, acceptPassword: acceptPassword) else { return false }
        var typed: String?
        defer { daemon.arbiter.leave(ticket.id) }
        if case .typedPassword(let p) = ticket.client { typed = p }
        // State may have changed while queued (another prompt, an unplug).
        if typed == nil, let refusal = daemon.preflight(user: user, policy: policy, rhost: ctx.rhost) {
            return finish(refusal, method: nil)
        }
        var templates: [[UInt8]] = []
        if typed == nil {
            do {
                templates = try daemon.store.fingers(of: user).compactMap { f throws(StorageError) in
                    try daemon.store.template(of: user, finger: f)
                }
            } catch {
                log.error("cannot read templates: \(error)")
                return finish(Refusal(outcome: .internalError, reason: "storage", text: .internalError), method: nil)
            }
            progress(rid, .prompt, .placeFinger(swipe: daemon.reader.info?.isSwipe ?? false), language)
        }

        var failures = 0
        while typed == nil {
            let cancellation = Cancellation()
            daemon.reader.verify(templates: templates, timeoutSeconds: timeout, cancellation: cancellation,
                                 retry: { [self] in post(.retry($0)) },
                                 completion: { [self] in post(.scanned($0)) })
            var scanned: Result<ScanResult, ReaderFailure>?
            let client = pump(rid, cancellation, acceptPassword: acceptPassword) { event in
                switch event {
                case .retry(let hint): progress(rid, .retry, .retry(hint), language)
                case .scanned(let r): scanned = r
                default: break
                }
                return scanned != nil
            }
            switch client {
            case .gone:
                log.info("client left mid-prompt: cancelled")
                daemon.publishOutcome(ctx, method: nil, outcome: .appCancel, reason: "clientGone")
                return false
            case .cancelled:
                return finish(Refusal(outcome: .appCancel, reason: "cancelled", text: .cancelled), method: nil)
            case .typedPassword(let p):
                typed = p  // the scan was cancelled; the password decides
                continue
            case .present: break
            }
            switch scanned! {
            case .success(.match):
                daemon.recordFingerprintSuccess(ctx)
                log.info("fingerprint matched")
                daemon.publishOutcome(ctx, method: "fingerprint", outcome: .success, reason: nil)
                reply(rid, .success, .recognised, language)
                return true
            case .success(.noMatch):
                failures += 1
                let lockout: Refusal?
                do { lockout = try daemon.recordFailedMatch(ctx) } catch {
                    // Not on disk, so not reported as a mere failure: refuse outright.
                    log.error("cannot record failed match: \(error)")
                    return finish(Refusal(outcome: .internalError, reason: "storage", text: .internalError), method: "fingerprint")
                }
                log.info("no match (\(failures)/\(maxTries))")
                if let lockout { return finish(lockout, method: "fingerprint") }
                if failures >= maxTries {
                    return finish(Refusal(outcome: .authenticationFailed, reason: "maxTries",
                                          text: .notRecognised(tries: failures)), method: "fingerprint")
                }
                progress(rid, .noMatch, .noMatch(triesLeft: maxTries - failures), language, style: .error)
            case .failure(let failure):
                log.notice("reader: \(failure)")
                return finish(Daemon.refusal(for: failure, timeout: timeout), method: "fingerprint")
            }
        }
        // biometrics-or-password: the daemon checks the typed password itself, so back-off applies.
        switch checkPassword(rid, ctx, typed!) {
        case nil: return false
        case .correct?:
            daemon.publishOutcome(ctx, method: "password", outcome: .success, reason: nil)
            reply(rid, .success, .passwordAccepted, language, reason: "password")
            return true
        case .refused(let refusal)?:
            reply(rid, refusal, language)  // already published by verifyPassword
            return true
        }
    }

    // MARK: enroll, delete

    private func enroll(_ frame: Frame, _ language: Language) throws(WireError) -> Bool {
        let rid = frame.requestID
        let user = try frame.requireString(.user)
        guard let finger = Finger(rawValue: try frame.requireString(.finger)) else { throw .wrongType(.finger) }
        guard authorizeWithPassword(frame, user: user, language) else { return true }
        guard let info = daemon.reader.info else {
            reply(rid, .biometryNotAvailable, .noReader, language, reason: "noReader")
            return true
        }
        guard let ticket = acquireReader(rid, language, acceptPassword: false) else { return false }
        defer { daemon.arbiter.leave(ticket.id) }
        progress(rid, .prompt, .enrollPrompt(finger: finger, stages: info.enrollStages), language)
        let cancellation = Cancellation()
        daemon.reader.enroll(user: user, fingerIndex: finger.fpFinger, cancellation: cancellation,
                             progress: { [self] in post(.enrollProgress($0)) },
                             completion: { [self] in post(.enrolled($0)) })
        var result: Result<[UInt8], ReaderFailure>?
        let client = pump(rid, cancellation, acceptPassword: false) { event in
            switch event {
            case .enrollProgress(.stage(let k, let n)):
                send(Frame(.progress, requestID: rid, [
                    Field(.progress, TouchGateWire.ProgressKind.enrollStage.rawValue), Field(.stage, Int32(k)), Field(.stages, Int32(n)),
                    Field(.style, MessageStyle.info.rawValue), Field(.message, Text.enrollStage(k, n).render(language)),
                ]))
            case .enrollProgress(.retry(let hint)):
                progress(rid, .retry, .retry(hint), language)
            case .enrolled(let r):
                result = r
            default: break
            }
            return result != nil
        }
        switch client {
        case .gone: return false
        case .cancelled: reply(rid, .appCancel, .cancelled, language); return true
        case .present, .typedPassword: break
        }
        switch result! {
        case .success(let template):
            let ctx = context(frame, user: user)
            do {
                try daemon.store.save(template, user: user, finger: finger)
                // Enrolling opts in. A user who proved their password just now has seen the new
                // set of prints; after root enrolls for someone, their password is asked once.
                try daemon.adminChange(ctx, action: "enroll:\(finger.rawValue)") { [daemon] in daemon.policyEngine.enable($0) }
                if !peer.isRoot { try daemon.recordPasswordSuccess(ctx) }
            } catch {
                log.error("cannot store template: \(error)")
                reply(rid, .internalError, .internalError, language)
                return true
            }
            daemon.events.publish(daemon.event("enrollmentChanged", ctx, method: nil, outcome: .success,
                                               reason: "enrolled:\(finger.rawValue)"))
            log.notice("enrolled", metadata: ["user": "\(user)", "finger": "\(finger.rawValue)"])
            reply(rid, .success, .enrolled(finger), language)
        case .failure(let failure):
            log.notice("enroll failed: \(failure)")
            reply(rid, Daemon.refusal(for: failure, timeout: 0), language)
        }
        return true
    }

    private func delete(_ frame: Frame, _ language: Language) throws(WireError) -> Bool {
        let user = try frame.requireString(.user)
        let all = frame.int(.all) == 1
        let named = try frame.string(.finger).map { name throws(WireError) -> Finger in
            guard let f = Finger(rawValue: name) else { throw .wrongType(.finger) }
            return f
        }
        guard all != (named != nil) else { throw .missingField(.finger) }
        guard authorizeWithPassword(frame, user: user, language) else { return true }
        let targets = all ? Finger.allCases : [named!]
        do {
            let removed = try daemon.store.delete(user: user, fingers: targets)
            if let named, removed.isEmpty {
                reply(frame.requestID, .notFound, .fingerNotEnrolled(named), language)
                return true
            }
            if !removed.isEmpty {
                daemon.events.publish(daemon.event("enrollmentChanged", context(frame, user: user), method: nil,
                                                   outcome: .success, reason: "deleted:\(removed.map(\.rawValue).joined(separator: ","))"))
            }
            log.notice("deleted \(removed.map(\.rawValue))", metadata: ["user": "\(user)"])
            reply(frame.requestID, .success, .deleted(removed.count), language)
        } catch {
            log.error("cannot delete templates: \(error)")
            reply(frame.requestID, .internalError, .internalError, language)
        }
        return true
    }

    // MARK: waiting with the client in view

    struct Ticket { let id: UInt64; let client: ClientState }

    /// Takes a place in the reader's queue, telling the client while it waits. Nil: the client left
    /// or cancelled (answered). A password typed while queued ends the wait with the reader held.
    private func acquireReader(_ rid: UInt32, _ language: Language, acceptPassword: Bool) -> Ticket? {
        let ticket = daemon.arbiter.enqueue { [self] in post(.granted) }
        if daemon.arbiter.isGranted(ticket) { return Ticket(id: ticket, client: .present) }
        progress(rid, .queued, .queued(ahead: daemon.arbiter.ahead(ticket)), language)
        let client = pump(rid, nil, acceptPassword: acceptPassword) { _ in daemon.arbiter.isGranted(ticket) }
        switch client {
        case .present, .typedPassword:
            return Ticket(id: ticket, client: client)
        case .cancelled, .gone:
            daemon.arbiter.leave(ticket)  // a client that goes away leaves the queue at once
            if client == .cancelled { reply(rid, .appCancel, .cancelled, language) }
            return nil
        }
    }

    /// Handles events until `handle` says done, sending keepalives and watching the client.
    /// When the client cancels, leaves or types its password, the operation is cancelled and its
    /// end still awaited, so the reader is free when this returns.
    private func pump(_ rid: UInt32, _ cancellation: Cancellation?, acceptPassword: Bool,
                      handle: (SessionEvent) -> Bool) -> ClientState {
        var client = ClientState.present
        var lastSent = monotonicMilliseconds()
        let keepalive = Int64(WireLimits.keepaliveMilliseconds)
        while true {
            for event in mailbox.withLock({ m -> [SessionEvent] in defer { m.removeAll() }; return m }) {
                if handle(event) { return client }
            }
            // Without an operation to wind down, a client that stopped being present ends the wait.
            if client != .present && cancellation == nil { return client }
            var fds = [pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)]
            let watchClient = client == .present
            let waitMs = watchClient ? max(0, keepalive - (monotonicMilliseconds() - lastSent)) : Int64(1000)
            let n = poll(&fds, watchClient ? 2 : 1, Int32(waitMs))
            if n < 0 && errno != EINTR { client = .gone; cancellation?.cancel(); continue }
            if fds[0].revents != 0 { wake.drain() }
            guard watchClient else { continue }
            if n == 0 {
                do { try connection.send(keepaliveFrame(rid)); lastSent = monotonicMilliseconds() } catch {
                    client = .gone; cancellation?.cancel()
                }
                continue
            }
            if fds[1].revents != 0 {
                do {
                    try connection.readAvailable()
                    while client == .present, let f = try connection.nextBuffered() {
                        guard f.requestID == rid else { throw ConnectionError.closed }
                        if f.kind == .cancel {
                            client = .cancelled
                        } else if f.kind == .password, acceptPassword, let p = f.string(.password) {
                            client = .typedPassword(p)
                        } else {
                            throw ConnectionError.closed
                        }
                        cancellation?.cancel()
                    }
                } catch {
                    // EOF, a socket error, or a frame that does not belong mid-prompt: the client is gone.
                    client = .gone
                    cancellation?.cancel()
                }
            }
        }
    }

    private func keepaliveFrame(_ rid: UInt32) -> Frame {
        Frame(.progress, requestID: rid, [Field(.progress, TouchGateWire.ProgressKind.keepalive.rawValue)])
    }

    // MARK: replies

    private func send(_ frame: Frame) {
        do { try connection.send(frame) } catch { log.debug("send failed: \(error)") }
    }

    func progress(_ rid: UInt32, _ kind: TouchGateWire.ProgressKind, _ text: Text, _ language: Language, style: MessageStyle = .info) {
        send(Frame(.progress, requestID: rid, [
            Field(.progress, kind.rawValue), Field(.style, style.rawValue), Field(.message, text.render(language)),
        ]))
    }

    func reply(_ rid: UInt32, _ outcome: Outcome, _ text: Text?, _ language: Language = .english,
               reason: String? = nil, seconds: Int? = nil, flags: Int32? = nil) {
        var fields = [Field(.code, outcome.rawValue)]
        if let reason { fields.append(Field(.reason, reason)) }
        if let seconds { fields.append(Field(.seconds, Int32(clamping: seconds))) }
        if let flags { fields.append(Field(.flags, flags)) }
        if let text { fields.append(Field(.message, text.render(language))) }
        send(Frame(.result, requestID: rid, fields))
    }

    func reply(_ rid: UInt32, _ refusal: Refusal, _ language: Language) {
        reply(rid, refusal.outcome, refusal.text, language, reason: refusal.reason, seconds: refusal.seconds,
              flags: refusal.askPassword ? Int32(TG_FLAG_ASK_PASSWORD) : nil)
    }
}
