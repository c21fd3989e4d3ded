// One client on the socket: non-blocking reads into a bounded frame buffer, a bounded output queue,
// deadlines for idle and slow clients, and at most one request at a time.
import Glibc
import Logging
import TouchGateCore
import TouchGateWire

@CoreActor final class ClientConnection: PromptClient {
    let fd: Int32
    let caller: Caller
    let person: UInt32
    private weak var listener: Listener?
    private var watch: FDWatch?
    private var reader = FrameReader()
    private var output: [UInt8] = []
    private var lastActivity = monotonicMilliseconds()
    private var partialSince: Int64?
    private(set) var closed = false
    /// The request in progress: its id, what the person does at it, and its task.
    private var request: (id: UInt32, input: PromptInput?, task: Task<Void, Never>?)?
    /// A PROGRESS of the running request carried ACCEPTS_PASSWORD: only then may a PASSWORD come.
    private var passwordOffered = false
    private var keepalive: LoopTimer?
    private var lastSent = monotonicMilliseconds()
    private var subscription: UInt64?
    var language = Language.english

    var core: Core? { listener?.core }
    /// The remote host of the client's login session, by logind's record (nil: local, or none).
    var sessionRemoteHost: String? { listener?.sessions.remoteHost(ofProcess: caller.pid) }
    var log: Logger { listener?.log ?? Logger(label: "touchgated") }
    var isBusy: Bool { request != nil && subscription == nil }

    init(fd: Int32, caller: Caller, person: UInt32, listener: Listener) {
        self.fd = fd
        self.caller = caller
        self.person = person
        self.listener = listener
        watch = FDWatch(fd: fd, events: .readable) { [weak self] events in self?.ready(events) ?? false }
    }

    /// A RESULT before any request was read (refused at accept): sent if it fits, never waited for.
    nonisolated static func refuse(_ fd: Int32, _ outcome: Outcome, text: Text) {
        var fields = [Field(.code, outcome.rawValue), Field(.message, text.render(.english))]
        if outcome == .busy { fields.append(Field(.reason, Reason.busy.rawValue)) }  // docs/spec.md §2
        if outcome == .systemCancel { fields.append(Field(.reason, Reason.shutdown.rawValue)) }
        let frame = Frame(.result, requestID: WireLimits.unsolicitedRequestID, fields)
        guard let bytes = try? frame.encoded() else { return }
        _ = bytes.withUnsafeBytes {
            Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
        }
    }

    // MARK: input

    private func ready(_ events: FDWatch.Events) -> Bool {
        guard !closed else { return false }
        if events.contains(.writable) { flush() }
        // A failed flush closes the connection, and its descriptor's number may already be
        // another thread's: nothing is read from it then.
        guard !closed else { return false }
        if events.contains(.readable) || events.contains(.hangUp) || events.contains(.error) { readAvailable() }
        return !closed
    }

    private func readAvailable() {
        var chunk = [UInt8](repeating: 0, count: 4096)
        // A bounded number of reads per wake-up, so one chatty client cannot hold the loop.
        for _ in 0..<4 {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n == 0 { close(reason: nil); return }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { break }
                close(reason: nil)
                return
            }
            lastActivity = monotonicMilliseconds()
            reader.append(chunk[0..<n])
            do {
                while let frame = try reader.next() {
                    handle(frame)
                    if closed { return }
                }
            } catch {
                notice("malformed request: \(error)")
                reply(request?.id ?? WireLimits.unsolicitedRequestID, Reply(.badRequest, text: .badRequest))
                close(reason: nil)
                return
            }
            partialSince = reader.bufferedCount > 0 ? (partialSince ?? lastActivity) : nil
            if n < chunk.count { break }
        }
    }

    private func handle(_ frame: Frame) {
        if let running = request {
            // Mid-request only this request's CANCEL, or the password typed at a prompt the core
            // said takes one.
            guard frame.requestID == running.id else { return protocolViolation("a frame for another request") }
            if frame.kind == .cancel {
                running.input?.deliver(.cancel)
                if subscription != nil { close(reason: nil) }  // a monitor ends when cancelled
            } else if frame.kind == .password, passwordOffered, running.input?.acceptsPassword == true,
                let p = frame.string(.password)
            {
                running.input?.deliver(.password(p))
            } else {
                protocolViolation("\(frame.kind) during a request")
            }
            return
        }
        guard frame.kind.isRequest, frame.kind != .password else {
            return protocolViolation("\(frame.kind) is not a request")
        }
        language = Language.ofClient(frame.string(.locale))
        if frame.kind == .cancel {
            // Nothing is running on this connection: the context is already finished.
            reply(frame.requestID, Reply(.invalidContext))
            return
        }
        start(frame)
    }

    /// A notice the client caused, within the listener's limits for its uid.
    private func notice(_ message: String) {
        guard let more = core?.clientNotices.admit(caller.uid) else { return }
        log.notice("\(message)\(more)", metadata: ["uid": "\(caller.uid)"])
    }

    private func protocolViolation(_ what: String) {
        notice("bad request: \(what)")
        reply(request?.id ?? WireLimits.unsolicitedRequestID, Reply(.badRequest, text: .badRequest))
        close(reason: nil)
    }

    // MARK: requests

    private func start(_ frame: Frame) {
        guard let core else { return close(reason: nil) }
        if let refusal = core.refusalWhileStopping { return reply(frame.requestID, refusal) }
        let input = PromptInput()
        request = (frame.requestID, input, nil)
        passwordOffered = false
        keepalive = LoopTimer(milliseconds: WireLimits.keepaliveMilliseconds / 2) { [weak self] in
            self?.sendKeepaliveIfQuiet() ?? false
        }
        let task = CoreLoop.shared.task { [weak self] in
            guard let self else { return }
            let outcome: Reply?
            do {
                outcome = try await RequestDispatch.run(frame, core: core, connection: self, input: input)
            } catch {
                self.notice("bad \(frame.kind) request: \(error)")
                self.reply(frame.requestID, Reply(.badRequest, text: .badRequest))
                self.close(reason: nil)
                return
            }
            self.finish(frame.requestID, outcome)
        }
        request?.task = task
    }

    /// The request's answer (nil: it already answered, e.g. a monitor that streams on).
    private func finish(_ id: UInt32, _ outcome: Reply?) {
        guard let outcome else { return }
        if !closed { reply(id, outcome) }
        request = nil
        keepalive?.cancel()
        keepalive = nil
        lastActivity = monotonicMilliseconds()
        listener?.requestEnded()
    }

    /// Turns this connection into an event stream (monitor): the request stays open until the
    /// client leaves.
    func becomeMonitor(_ id: UInt64) {
        subscription = id
        keepalive?.cancel()
        keepalive = nil
        listener?.requestEnded()  // a monitor streams on, but no longer holds up a shutdown
    }

    /// Delivers one monitor event; false when the client is not reading (it is dropped).
    func deliverEvent(_ json: String) -> Bool {
        guard !closed, let id = request?.id else { return false }
        send(Frame(.event, requestID: id, Frame.pieces(json).map { Field(.json, $0) }))
        return !closed
    }

    // MARK: output

    func show(_ progress: ProgressEvent) {
        guard let id = request?.id else { return }
        var fields = [Field(.progress, progress.kind.rawValue)]
        if let text = progress.text {
            fields.append(Field(.style, progress.style.rawValue))
            fields.append(Field(.message, Self.fitted(text.render(language))))
        }
        if let stage = progress.stage, let stages = progress.stages {
            fields.append(Field(.stage, Int32(stage)))
            fields.append(Field(.stages, Int32(stages)))
        }
        if progress.acceptsPassword {
            fields.append(Field(.flags, WireLimits.flagAcceptsPassword))
            passwordOffered = true
        }
        send(Frame(.progress, requestID: id, fields))
    }

    func reply(_ id: UInt32, _ r: Reply) {
        var fields = [Field(.code, r.outcome.rawValue)]
        if let reason = r.reason { fields.append(Field(.reason, reason.rawValue)) }
        if let seconds = r.seconds { fields.append(Field(.seconds, Int32(clamping: seconds))) }
        let flags = (r.askPassword ? WireLimits.flagAskPassword : 0) | (r.byPassword ? WireLimits.flagByPassword : 0)
        if flags != 0 { fields.append(Field(.flags, flags)) }
        let message = r.text.map { Self.fitted($0.render(language)) }
        if let message { fields.append(Field(.message, message)) }
        let essentials = fields
        fields += r.fingers.map { Field(.finger, $0.rawValue) }
        fields += r.devices.map { Field(.device, $0) }
        if let d = r.domainState { fields.append(Field(.domainState, d)) }
        if let j = r.json { fields += Frame.pieces(j).map { Field(.json, $0) } }
        if let secret = r.authtok { fields.append(Field(.password, secret.value)) }
        // A reply too big for one frame (a long document) still answers, with its outcome alone.
        if !send(Frame(.result, requestID: id, fields)) { send(Frame(.result, requestID: id, essentials)) }
    }

    /// A sentence cut to what one string field carries (at a Unicode scalar's end, marked with "…"):
    /// one that names what a client sent (a long invalid name) must not cost the reply.
    static func fitted(_ text: String, limit: Int = WireLimits.maxString) -> String {
        guard text.utf8.count > limit else { return text }
        return Frame.pieces(text, limit: limit - 3)[0] + "…"
    }

    private func sendKeepaliveIfQuiet() -> Bool {
        guard let id = request?.id, !closed else { return false }
        if monotonicMilliseconds() - lastSent >= Int64(WireLimits.keepaliveMilliseconds / 2) {
            send(Frame(.progress, requestID: id, [Field(.progress, ProgressKind.keepalive.rawValue)]))
        }
        return !closed
    }

    /// False when the frame breaks a limit of the wire and was not sent (said in the log).
    @discardableResult
    private func send(_ frame: Frame) -> Bool {
        guard !closed else { return true }
        guard let bytes = try? frame.encoded() else {
            log.error("cannot encode a \(frame.kind) frame")
            return false
        }
        output.append(contentsOf: bytes)
        lastSent = monotonicMilliseconds()
        flush()
        if !closed, output.count > (listener?.limits.outputLimit ?? 1 << 18) {
            close(reason: "client not reading its output")
        }
        return true
    }

    private func flush() {
        while !output.isEmpty {
            let n = output.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if n > 0 { output.removeFirst(n); continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            close(reason: nil)
            return
        }
        watch?.watch(output.isEmpty ? .readable : [.readable, .writable])
    }

    // MARK: deadlines and the end

    func checkDeadlines(now: Int64) {
        guard !closed, let limits = listener?.limits else { return }
        if let since = partialSince, now - since > Int64(limits.slowSenderMilliseconds) {
            close(reason: "request not complete within \(limits.slowSenderMilliseconds) ms")
        } else if request == nil, now - lastActivity > Int64(limits.idleMilliseconds) {
            close(reason: nil)
        }
    }

    /// Closes at once. A request still running is cancelled: the core treats that as the client
    /// gone (appCancel), so a prompt leaves the reader's queue now.
    func close(reason: String?) {
        guard !closed else { return }
        closed = true
        if let reason { notice("closing a connection: \(reason)") }
        watch?.cancel()
        watch = nil
        keepalive?.cancel()
        keepalive = nil
        request?.task?.cancel()
        if let subscription { core?.stopMonitoring(subscription) }
        subscription = nil
        output = []
        Glibc.close(fd)
        listener?.forget(self)
    }
}
