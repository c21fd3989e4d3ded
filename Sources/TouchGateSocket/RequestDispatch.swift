// Frames to the core's typed requests and back: the socket front-end only translates.
import TouchGateCore
import TouchGateWire

@CoreActor enum RequestDispatch {
    /// Runs one request; nil when the request answered by itself (a monitor stream).
    static func run(_ frame: Frame, core: Core, connection: ClientConnection, input: PromptInput)
        async throws(WireError) -> Reply?
    {
        let caller = connection.caller
        // The host the client names, else, for a prompt, its login session's when that is remote:
        // a remote session's client that leaves out its RHOST is still remote (docs/spec.md §9).
        let named = frame.string(.rhost).flatMap { $0.isEmpty ? nil : $0 }
        let judgesRemote = frame.kind == .evaluate || frame.kind == .canEvaluate
        let rhost = named ?? (judgesRemote ? connection.sessionRemoteHost : nil)
        let origin = Origin(service: frame.string(.service), tty: frame.string(.tty), rhost: rhost)
        // The reader the request names (pam_touchgate's device=, the CLI's --device); nil: the default.
        let reader = frame.string(.device)
        switch frame.kind {
        case .canEvaluate:
            return await core.canEvaluate(
                user: try frame.requireString(.user), policy: try policy(frame),
                rhost: origin.rhost, reader: reader, caller: caller)
        case .evaluate:
            // What only the client knows; the core decides from it (unknown bits are ignored).
            let flags = frame.int(.flags) ?? 0
            let request = EvaluateRequest(
                user: try frame.requireString(.user), policy: try policy(frame), origin: origin,
                maxTries: frame.int(.maxTries).map(Int.init), timeoutSeconds: frame.int(.timeout).map(Int.init),
                noInput: flags & WireLimits.flagNoInput != 0, noTerminal: flags & WireLimits.flagNoTerminal != 0,
                wantAuthtok: flags & WireLimits.flagWantAuthtok != 0, reader: reader)
            return await core.evaluate(request, caller: caller, client: connection, input: input)
        case .enroll:
            guard let finger = Finger(rawValue: try frame.requireString(.finger)) else { throw .wrongType(.finger) }
            return await core.enroll(
                user: try frame.requireString(.user), finger: finger, password: frame.string(.password),
                origin: origin, caller: caller, client: connection, input: input, reader: reader)
        case .list:
            return await core.list(user: try frame.requireString(.user), caller: caller, reader: reader)
        case .delete:
            let all = frame.int(.all) == 1
            let named = try frame.string(.finger).map { name throws(WireError) -> Finger in
                guard let f = Finger(rawValue: name) else { throw .wrongType(.finger) }
                return f
            }
            guard all != (named != nil) else { throw .missingField(.finger) }
            // The answer names each finger deleted (FINGER), so `delete --all` can tell none.
            return await core.delete(
                user: try frame.requireString(.user), fingers: named.map { [$0] } ?? [], all: all,
                password: frame.string(.password), origin: origin, caller: caller, reader: reader)
        case .devices:
            return await core.devices()
        case .status:
            return await core.status(user: try frame.requireString(.user), caller: caller, reader: reader)
        case .enable:
            return await core.enable(
                user: try frame.requireString(.user), password: frame.string(.password),
                origin: origin, caller: caller)
        case .disable:
            return await core.disable(user: try frame.requireString(.user), origin: origin, caller: caller)
        case .lock:
            return await core.lock(user: try frame.requireString(.user), origin: origin, caller: caller)
        case .reset:
            return await core.reset(user: try frame.requireString(.user), origin: origin, caller: caller)
        case .domainState:
            return await core.domainState(
                user: try frame.requireString(.user), service: frame.string(.service) ?? "",
                caller: caller)
        case .monitor:
            let (reply, subscription) = await core.monitor(user: frame.string(.user), caller: caller) {
                [weak connection] json in
                connection?.deliverEvent(json) ?? false
            }
            guard let subscription else { return reply }
            // The client may have left while its account was looked up: nothing would end it.
            guard !connection.closed else {
                core.stopMonitoring(subscription)
                return nil
            }
            connection.reply(frame.requestID, reply)
            connection.becomeMonitor(subscription)
            return nil
        case .passwordSuccess:
            return await core.passwordSuccessReport(
                user: try frame.requireString(.user), password: frame.string(.password), origin: origin,
                caller: caller)
        case .keyringEnable:
            return await core.keyringEnable(
                user: try frame.requireString(.user), password: frame.string(.password), origin: origin,
                caller: caller)
        case .keyringRenew:
            return await core.keyringRenew(
                user: try frame.requireString(.user), password: try frame.requireString(.password), caller: caller)
        case .keyringDisable:
            return await core.keyringDisable(user: try frame.requireString(.user), origin: origin, caller: caller)
        case .verifyPassword:
            return await core.verifyPasswordRequest(
                user: try frame.requireString(.user),
                password: try frame.requireString(.password), origin: origin, caller: caller)
        case .cancel, .password, .result, .progress, .event:
            return Reply(.badRequest, text: .badRequest)
        }
    }

    private static func policy(_ frame: Frame) throws(WireError) -> EvaluationPolicy {
        guard let p = EvaluationPolicy(rawValue: try frame.requireInt(.policy)) else { throw .wrongType(.policy) }
        return p
    }
}
