// One request to touchgated: connect, send, check every reply's request id, await the RESULT.
import TouchGateL10n
import TouchGateWire
#if canImport(Glibc)
import Glibc
#endif

struct DaemonClient {
    let socketPath: String

    /// Fails early when nothing listens at the path, before asking anyone for a password.
    func checkReachable() throws(Failure) {
        var st = stat()
        guard stat(socketPath, &st) == 0 else {
            let e = errno
            throw unreachable(systemError(e, cli))
        }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else { throw unreachable(systemError(ENOTSOCK, cli)) }
    }

    /// A short request: the successful RESULT; any other outcome throws. The daemon keeps a
    /// request alive with keepalives while it works (its PAM check of a password, which delays a
    /// wrong one; the readers' first opening; the TPM), so the wait ends after
    /// TG_SILENCE_DEADLINE_MS without any frame, or at `requestCapMilliseconds`.
    func call(_ kind: Kind, _ fields: [Field]) throws(Failure) -> Frame {
        let exchange = try start(kind, fields)
        let cap = monotonicMilliseconds() + Int64(Self.requestCapMilliseconds)
        while true {
            guard let frame = try exchange.nextOrEnd(before: cap) else {
                throw Failure(L("touchgated closed the connection before answering", cli))
            }
            if frame.kind == .result { return try succeeded(frame, naming: Self.device(fields)) }
            // Progress during a short request (keepalives) carries nothing to show.
        }
    }

    /// The longest a short request waits: the daemon's password check (30 s at most), with room
    /// for the readers' first opening or a TPM conversation (10 s each) before it.
    static let requestCapMilliseconds = 45_000

    /// The failure when `requestCapMilliseconds` has passed.
    static var capPassed: Failure {
        Failure(L("touchgated did not answer within %s s", cli, requestCapMilliseconds / 1000))
    }

    /// An interactive request (enroll, verify): shows progress until the RESULT, with no overall cap;
    /// only TG_SILENCE_DEADLINE_MS without any frame (keepalives included) gives up.
    func prompt(_ kind: Kind, _ fields: [Field], progress: (Frame) -> Void) throws(Failure) -> Frame {
        let exchange = try start(kind, fields)
        while true {
            let frame = try exchange.next(deadlineMilliseconds: WireLimits.silenceDeadlineMilliseconds, wait: .silence)
            switch frame.kind {
            case .result: return try succeeded(frame, naming: Self.device(fields))
            case .progress: progress(frame)
            default: throw Failure(L("touchgated sent an unexpected message", cli))
            }
        }
    }

    /// A stream (monitor): every EVENT to `event`, until the daemon closes the connection, which
    /// is a failure: a monitor that stops silently would look like one with nothing to report.
    /// Until the daemon has acknowledged the subscription, the short requests' deadlines apply
    /// (it sends keepalives meanwhile); then events come when they happen, without a deadline.
    func stream(_ kind: Kind, _ fields: [Field], event: (Frame) throws(Failure) -> Void) throws(Failure) {
        let exchange = try start(kind, fields)
        let cap = monotonicMilliseconds() + Int64(Self.requestCapMilliseconds)
        var acknowledged = false
        while true {
            let received =
                acknowledged
                ? try exchange.nextOrEnd(deadlineMilliseconds: nil, wait: .silence)
                : try exchange.nextOrEnd(before: cap)
            // The stream has no end of its own: the daemon closed it (it stopped or restarted, or
            // it dropped this monitor, 256 KiB of events behind: docs/spec.md §7).
            guard let frame = received else {
                throw Failure(
                    L("touchgated ended the event stream (it stopped or restarted, or this monitor fell behind)", cli))
            }
            switch frame.kind {
            case .event: try event(frame)
            case .result:
                _ = try succeeded(frame, naming: nil)  // an acknowledgement; a refusal throws
                acknowledged = true
            case .progress: break
            default: throw Failure(L("touchgated sent an unexpected message", cli))
            }
        }
    }

    // MARK: internals

    private func unreachable(_ cause: String) -> Failure {
        Failure(L("cannot reach touchgated at %s: %s", cli, socketPath, cause))
    }

    private func start(_ kind: Kind, _ fields: [Field]) throws(Failure) -> Exchange {
        let connection: Connection
        do {
            connection = try Connection.connect(path: socketPath)
        } catch {
            switch error {
            case .cannotConnect(_, let e), .io(let e): throw unreachable(systemError(e, cli))
            case .socketPathTooLong: throw unreachable(L("socket path too long", cli))
            case .timedOut: throw unreachable(L("timed out", cli))
            default: throw unreachable(error.description)
            }
        }
        let exchange = Exchange(
            connection: connection, requestID: UInt32.random(in: 1..<WireLimits.unsolicitedRequestID))
        // Every request carries the caller's language: the daemon's sentences come back in it.
        try exchange.send(kind, fields.contains { $0.tag == .locale } ? fields : fields + localeField())
        return exchange
    }

    /// The reader a request names (its DEVICE field: `--device`).
    private static func device(_ fields: [Field]) -> String? {
        guard case .string(let name)? = fields.first(where: { $0.tag == .device })?.value else { return nil }
        return name
    }

    /// The RESULT when its CODE is 0; otherwise its MESSAGE, or a sentence for the outcome, as a
    /// Failure. A reader named (`device`) that none answers to is refused as `noReader` with the
    /// sentence a login shows when there is no reader (docs/spec.md §6, DEVICE); here, where the
    /// name was typed, the failure says the name matched none.
    private func succeeded(_ result: Frame, naming device: String?) throws(Failure) -> Frame {
        guard let code = result.int(.code) else {
            throw Failure(L("touchgated sent a result without a code", cli))
        }
        if code == Outcome.success.rawValue { return result }
        if let device, result.string(.reason) == Reason.noReader.rawValue {
            throw Failure(L("No reader named '%s' (touchgate devices lists them)", cli, device))
        }
        if let message = result.string(.message), !message.isEmpty {
            // Refused before the request (and its LOCALE) was read: in English, one of the
            // catalog's sentences, shown in the caller's language (docs/spec.md §6).
            let unread = result.requestID == WireLimits.unsolicitedRequestID
            throw Failure(unread ? translated(message, cli) : message)
        }
        throw Failure(sentence(for: code, reason: result.string(.reason), seconds: result.int(.seconds)))
    }
}

/// Which deadline a receive waits under, for the sentence when it passes.
private enum Wait {
    /// The reply to what was just sent.
    case reply
    /// Any frame, keepalives included (TG_SILENCE_DEADLINE_MS).
    case silence
    /// The rest of the request's overall cap, shorter than the silence deadline.
    case cap
}

/// A connection carrying one request; every frame read back must echo its request id.
private struct Exchange {
    let connection: Connection
    let requestID: UInt32

    func send(_ kind: Kind, _ fields: [Field]) throws(Failure) {
        do {
            try connection.send(Frame(kind, requestID: requestID, fields))
        } catch .wire(let problem) {
            throw Failure(L("the request cannot be sent: %s", cli, problem))  // ours, not the daemon's
        } catch .closed {
            // Refused at accept (busy), the daemon answered and hung up before reading anything:
            // its refusal waits to be read, and the receive that follows says it (or that the
            // connection ended without one).
        } catch {
            throw failure(error, wait: .reply)
        }
    }

    /// The next frame for this request; a frame for another request is an error, never a result.
    func next(deadlineMilliseconds: Int?, wait: Wait) throws(Failure) -> Frame {
        guard let frame = try nextOrEnd(deadlineMilliseconds: deadlineMilliseconds, wait: wait) else {
            throw Failure(L("touchgated closed the connection before answering", cli))
        }
        return frame
    }

    /// The next frame within the silence deadline and before `cap` (a monotonic time), or nil
    /// when the daemon closed the connection. A wait that the cap cuts short says so when it ends.
    func nextOrEnd(before cap: Int64) throws(Failure) -> Frame? {
        let left = Int(cap - monotonicMilliseconds())
        guard left > 0 else { throw DaemonClient.capPassed }
        if left < WireLimits.silenceDeadlineMilliseconds {
            return try nextOrEnd(deadlineMilliseconds: left, wait: .cap)
        }
        return try nextOrEnd(deadlineMilliseconds: WireLimits.silenceDeadlineMilliseconds, wait: .silence)
    }

    /// Like `next`, but nil when the daemon closed the connection.
    func nextOrEnd(deadlineMilliseconds: Int?, wait: Wait) throws(Failure) -> Frame? {
        let frame: Frame
        do {
            frame = try connection.receive(deadlineMilliseconds: deadlineMilliseconds)
        } catch .closed {
            return nil
        } catch {
            throw failure(error, wait: wait)
        }
        // The daemon's refusal of a request it never read (busy at accept) has the unsolicited id.
        guard WireLimits.answers(frame, request: requestID) else {
            throw Failure(L("touchgated answered request %s, not %s", cli, frame.requestID, requestID))
        }
        guard !frame.kind.isRequest else {
            throw Failure(L("touchgated sent an unexpected message", cli))
        }
        return frame
    }

    private func failure(_ error: ConnectionError, wait: Wait) -> Failure {
        switch error {
        case .closed:
            return Failure(L("touchgated closed the connection", cli))
        case .timedOut:
            switch wait {
            case .silence:
                let s = Double(WireLimits.silenceDeadlineMilliseconds) / 1000
                return Failure(L("touchgated stopped answering (nothing for %s s)", cli, s))
            case .reply:
                let s = Double(WireLimits.replyDeadlineMilliseconds) / 1000
                return Failure(L("touchgated did not answer within %s s", cli, s))
            case .cap:
                return DaemonClient.capPassed
            }
        case .wire(let w):
            return Failure(L("bad message from touchgated: %s", cli, w))
        case .io(let e):
            return Failure(L("socket error: %s", cli, systemError(e, cli)))
        case .socketPathTooLong, .cannotConnect:
            return Failure(error.description)
        }
    }
}

/// The LOCALE field when the caller has a locale.
func localeField() -> [Field] {
    // One no frame can carry is left out: the daemon then answers in its own language.
    cli.locale.flatMap { $0.utf8.count <= WireLimits.maxString ? [Field(.locale, $0)] : nil } ?? []
}
