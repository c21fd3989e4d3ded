// One client connection: reads requests, checks the peer's rights, runs prompts and enrollments.
import Glibc
import Logging
import Synchronization
import TouchGateReader
import TouchGateWire

/// What other threads (the reader, the arbiter) tell a session; it handles them on its own thread.
enum SessionEvent: Sendable {
    case granted
    case retry(RetryHint)
    case scanned(Result<ScanResult, ReaderFailure>)
    case enrollProgress(EnrollEvent)
    case enrolled(Result<[UInt8], ReaderFailure>)
}

/// How a wait on the reader ended from the client's side.
enum ClientState {
    case present
    case cancelled   // sent CANCEL for this request
    case gone        // closed the connection
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
        default:
            reply(frame.requestID, .badRequest, .badRequest, language)
            return true
        }
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

    /// Enroll and delete change what unlocks an account: root only until the daemon verifies passwords.
    private func authorizeRootForUser(_ frame: Frame, user: String, _ language: Language) -> Bool {
        guard authorizeSelfOrRoot(frame, user: user, language) else { return false }
        guard peer.isRoot else {
            log.notice("refused \(frame.kind): needs root", metadata: ["user": "\(user)"])
            reply(frame.requestID, .notPermitted, .notPermitted, language)
            return false
        }
        return true
    }

    // MARK: evaluate

    private func evaluate(_ frame: Frame, _ language: Language) throws(WireError) -> Bool {
        let rid = frame.requestID
        let user = try frame.requireString(.user)
        guard let policy = EvaluationPolicy(rawValue: try frame.requireInt(.policy)) else { throw .wrongType(.policy) }
        let service = frame.string(.service) ?? "unknown"
        guard authorizeSelfOrRoot(frame, user: user, language) else { return true }
        var log = self.log
        log[metadataKey: "user"] = "\(user)"
        log[metadataKey: "service"] = "\(service)"
        if let refusal = daemon.preflight(user: user, policy: policy, rhost: frame.string(.rhost)) {
            log.info("evaluate refused: \(refusal.outcome.name)")
            reply(rid, refusal, language)
            return true
        }
        // Per-request limits may only tighten the daemon's.
        let maxTries = min(daemon.policy.maxTries, frame.int(.maxTries).map { Int(max(1, $0)) } ?? Int.max)
        let timeout = Int(min(daemon.policy.timeout, frame.int(.timeout).map { Int64(max(1, $0)) } ?? Int64.max))

        guard let ticket = acquireReader(rid, language) else { return false }
        defer { daemon.arbiter.leave(ticket) }
        // State may have changed while queued (another prompt, an unplug).
        if let refusal = daemon.preflight(user: user, policy: policy, rhost: frame.string(.rhost)) {
            reply(rid, refusal, language)
            return true
        }
        let templates: [[UInt8]]
        do {
            templates = try daemon.store.fingers(of: user).compactMap { f throws(StorageError) in
                try daemon.store.template(of: user, finger: f)
            }
        } catch {
            log.error("cannot read templates: \(error)")
            reply(rid, .internalError, .internalError, language)
            return true
        }
        progress(rid, .prompt, .placeFinger(swipe: daemon.reader.info?.isSwipe ?? false), language)

        var failures = 0
        while true {
            let cancellation = Cancellation()
            daemon.reader.verify(templates: templates, timeoutSeconds: timeout, cancellation: cancellation,
                                 retry: { [self] in post(.retry($0)) },
                                 completion: { [self] in post(.scanned($0)) })
            var scanned: Result<ScanResult, ReaderFailure>?
            let client = pump(rid, cancellation) { event in
                switch event {
                case .retry(let hint):
                    progress(rid, .retry, .retry(hint), language)
                case .scanned(let r):
                    scanned = r
                default: break
                }
                return scanned != nil
            }
            guard let scanned else { return false }  // unreachable: pump returns after .scanned
            switch client {
            case .gone:
                log.info("client left mid-prompt: cancelled")
                return false
            case .cancelled:
                reply(rid, .appCancel, .cancelled, language)
                return true
            case .present: break
            }
            switch scanned {
            case .success(.match):
                daemon.recordFingerprintSuccess(user: user)
                log.info("fingerprint matched")
                reply(rid, .success, .recognised, language)
                return true
            case .success(.noMatch):
                failures += 1
                daemon.recordFailedMatch(user: user)
                log.info("no match (\(failures)/\(maxTries))")
                if failures >= maxTries {
                    reply(rid, .authenticationFailed, .notRecognised(tries: failures), language, reason: "maxTries")
                    return true
                }
                progress(rid, .noMatch, .noMatch(triesLeft: maxTries - failures), language, style: .error)
            case .failure(let failure):
                log.notice("reader: \(failure)")
                reply(rid, Daemon.refusal(for: failure, timeout: timeout), language)
                return true
            }
        }
    }

    // MARK: enroll, delete

    private func enroll(_ frame: Frame, _ language: Language) throws(WireError) -> Bool {
        let rid = frame.requestID
        let user = try frame.requireString(.user)
        guard let finger = Finger(rawValue: try frame.requireString(.finger)) else { throw .wrongType(.finger) }
        guard authorizeRootForUser(frame, user: user, language) else { return true }
        guard let info = daemon.reader.info else {
            reply(rid, .biometryNotAvailable, .noReader, language, reason: "noReader")
            return true
        }
        guard let ticket = acquireReader(rid, language) else { return false }
        defer { daemon.arbiter.leave(ticket) }
        progress(rid, .prompt, .enrollPrompt(finger: finger, stages: info.enrollStages), language)
        let cancellation = Cancellation()
        daemon.reader.enroll(user: user, fingerIndex: finger.fpFinger, cancellation: cancellation,
                             progress: { [self] in post(.enrollProgress($0)) },
                             completion: { [self] in post(.enrolled($0)) })
        var result: Result<[UInt8], ReaderFailure>?
        let client = pump(rid, cancellation) { event in
            switch event {
            case .enrollProgress(.stage(let k, let n)):
                send(Frame(.progress, requestID: rid, [
                    Field(.progress, ProgressKind.enrollStage.rawValue), Field(.stage, Int32(k)), Field(.stages, Int32(n)),
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
        case .present: break
        }
        switch result! {
        case .success(let template):
            do {
                try daemon.store.save(template, user: user, finger: finger)
            } catch {
                log.error("cannot store template: \(error)")
                reply(rid, .internalError, .internalError, language)
                return true
            }
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
        guard authorizeRootForUser(frame, user: user, language) else { return true }
        let targets = all ? Finger.allCases : [named!]
        do {
            let removed = try daemon.store.delete(user: user, fingers: targets)
            if let named, removed.isEmpty {
                reply(frame.requestID, .notFound, .fingerNotEnrolled(named), language)
                return true
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

    /// Takes a place in the reader's queue, telling the client while it waits. Nil: the client left.
    private func acquireReader(_ rid: UInt32, _ language: Language) -> UInt64? {
        let ticket = daemon.arbiter.enqueue { [self] in post(.granted) }
        if daemon.arbiter.isGranted(ticket) { return ticket }
        progress(rid, .queued, .queued(ahead: daemon.arbiter.ahead(ticket)), language)
        let client = pump(rid, nil) { _ in daemon.arbiter.isGranted(ticket) }
        guard client == .present else {
            daemon.arbiter.leave(ticket)  // a client that goes away leaves the queue at once
            if client == .cancelled { reply(rid, .appCancel, .cancelled, language) }
            return nil
        }
        return ticket
    }

    /// Handles events until `handle` says done, sending keepalives and watching the client.
    /// When the client cancels or leaves, the operation is cancelled and its end still awaited,
    /// so the reader is free when this returns.
    private func pump(_ rid: UInt32, _ cancellation: Cancellation?, handle: (SessionEvent) -> Bool) -> ClientState {
        var client = ClientState.present
        var lastSent = monotonicMilliseconds()
        let keepalive = Int64(WireLimits.keepaliveMilliseconds)
        while true {
            for event in mailbox.withLock({ m -> [SessionEvent] in defer { m.removeAll() }; return m }) {
                if handle(event) { return client }
            }
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
                    while let f = try connection.nextBuffered() {
                        guard f.kind == .cancel, f.requestID == rid else { throw ConnectionError.closed }
                        client = .cancelled
                        cancellation?.cancel()
                    }
                } catch {
                    // EOF, a socket error, or anything but a CANCEL mid-prompt: treat the client as gone.
                    client = .gone
                    cancellation?.cancel()
                }
            }
        }
    }

    private func keepaliveFrame(_ rid: UInt32) -> Frame {
        Frame(.progress, requestID: rid, [Field(.progress, ProgressKind.keepalive.rawValue)])
    }

    // MARK: replies

    private func send(_ frame: Frame) {
        do { try connection.send(frame) } catch { log.debug("send failed: \(error)") }
    }

    func progress(_ rid: UInt32, _ kind: ProgressKind, _ text: Text, _ language: Language, style: MessageStyle = .info) {
        send(Frame(.progress, requestID: rid, [
            Field(.progress, kind.rawValue), Field(.style, style.rawValue), Field(.message, text.render(language)),
        ]))
    }

    func reply(_ rid: UInt32, _ outcome: Outcome, _ text: Text?, _ language: Language = .english,
               reason: String? = nil, seconds: Int? = nil) {
        var fields = [Field(.code, outcome.rawValue)]
        if let reason { fields.append(Field(.reason, reason)) }
        if let seconds { fields.append(Field(.seconds, Int32(clamping: seconds))) }
        if let text { fields.append(Field(.message, text.render(language))) }
        send(Frame(.result, requestID: rid, fields))
    }

    func reply(_ rid: UInt32, _ refusal: Refusal, _ language: Language) {
        reply(rid, refusal.outcome, refusal.text, language, reason: refusal.reason, seconds: refusal.seconds)
    }
}
