// Runs an assembled stack the way Linux-PAM's dispatcher does (pam_dispatch.c), with each
// module's result given by the caller: what a stack does when a module succeeds or fails.

/// One module reached during a run, and what it returned.
public struct ModuleCall: Equatable, Sendable {
    public let entry: StackEntry
    public let result: PAMResult
}

public struct SimulationOutcome: Equatable, Sendable {
    /// What pam_authenticate (or the type's call) would return.
    public let result: PAMResult
    /// Every module reached, in order (substacks opened).
    public let calls: [ModuleCall]

    public var succeeded: Bool { result == .success }

    /// Whether a module line matching `predicate` was reached.
    public func reached(_ predicate: (StackEntry) -> Bool) -> Bool { calls.contains { predicate($0.entry) } }
}

public enum PAMSimulator {
    /// Linux-PAM's PAM_MUST_FAIL_CODE: the result when no module decided.
    static let mustFail = PAMResult.permDenied

    public static func run(_ entries: [StackEntry], module behaviour: (StackEntry) -> PAMResult) -> SimulationOutcome {
        var calls: [ModuleCall] = []
        let (status, _) = dispatch(entries, behaviour, &calls)
        return SimulationOutcome(result: status, calls: calls)
    }

    private enum Impression { case undecided, positive, negative }

    /// One level of the stack; a substack is one more level whose result its line takes as a module's.
    private static func dispatch(
        _ entries: [StackEntry], _ behaviour: (StackEntry) -> PAMResult,
        _ calls: inout [ModuleCall]
    ) -> (PAMResult, Impression) {
        var impression = Impression.undecided
        var status = mustFail
        var i = 0
        while i < entries.count {
            let entry = entries[i]
            let retval: PAMResult
            if let inner = entry.substack {
                let (innerStatus, innerImpression) = dispatch(inner, behaviour, &calls)
                retval = innerImpression == .undecided ? .ignore : innerStatus
            } else {
                retval = behaviour(entry)
                calls.append(ModuleCall(entry: entry, result: retval))
            }
            switch entry.control.action(for: retval) {
            case .reset:
                impression = .undecided
                status = mustFail
            case .ok, .done:
                if impression == .undecided || (impression == .positive && status == .success) {
                    if retval != .ignore {
                        impression = .positive
                        status = retval
                    }
                }
                if impression != .negative && entry.control.action(for: retval) == .done {
                    return finish(status, impression)
                }
            case .bad, .die:
                if impression != .negative {
                    impression = .negative
                    status = retval == .ignore ? mustFail : retval
                }
                if entry.control.action(for: retval) == .die { return finish(status, impression) }
            case .ignore:
                break
            case .jump(let n):
                // Skips n lines of this level; jumping past the end is "bad jump in stack".
                if i + n >= entries.count {
                    return (mustFail, .negative)
                }
                i += n
            }
            i += 1
        }
        return finish(status, impression)
    }

    private static func finish(_ status: PAMResult, _ impression: Impression) -> (PAMResult, Impression) {
        // A stack where nothing said yes does not succeed, whatever the last status was.
        if impression != .positive && status == .success { return (mustFail, impression) }
        if impression == .undecided { return (mustFail, impression) }
        return (status, impression)
    }
}
