// Runs a handler list the way Linux-PAM 1.5.2's dispatcher does for pam_authenticate
// (`_pam_dispatch_aux`, pam_dispatch.c), with each module's result given by the caller.

/// One module reached during a run, and what it returned.
public struct ModuleCall: Equatable, Sendable {
    public let entry: StackEntry
    public let result: PAMResult
}

public struct SimulationOutcome: Equatable, Sendable {
    /// What pam_authenticate (or the type's call) would return.
    public let result: PAMResult
    /// Every module reached, in order.
    public let calls: [ModuleCall]

    public var succeeded: Bool { result == .success }

    /// Whether a module line matching `predicate` was reached.
    public func reached(_ predicate: (StackEntry) -> Bool) -> Bool { calls.contains { predicate($0.entry) } }
}

public enum PAMSimulator {
    /// Linux-PAM's PAM_MUST_FAIL_CODE: a rejected line's result, and the result when no module decided.
    static let mustFail = PAMResult.permDenied

    private enum Impression { case undecided, positive, negative }

    /// `behaviour` gives each module line's result; nil makes the line do nothing (it still counts
    /// in jumps), as if the module were not there.
    ///
    /// One list for the whole stack, substacks included one level deeper: the substack line
    /// itself is skipped; a substack's modules act on the same impression and status as the
    /// lines around it, saved on entering it for `reset`; `done` and `die` end only the level
    /// they are on (`done` only once the impression is positive); a jump stays on its level and
    /// one past its end makes the stack fail and goes on after it.
    public static func run(_ entries: [StackEntry], module behaviour: (StackEntry) -> PAMResult?) -> SimulationOutcome {
        var calls: [ModuleCall] = []
        var impression = Impression.undecided
        var status = mustFail
        var saved: [Int: (Impression, PAMResult)] = [0: (.undecided, mustFail)]
        var previousLevel = 0
        var i = 0
        while i < entries.count {
            let entry = entries[i]
            let level = entry.level
            defer {
                previousLevel = level
                i += 1
            }
            if previousLevel < level { saved[level] = (impression, status) }
            let retval: PAMResult
            switch entry.kind {
            case .substack: continue
            case .mustFail: retval = mustFail
            case .module:
                guard let result = behaviour(entry) else { continue }
                retval = result
                calls.append(ModuleCall(entry: entry, result: result))
            }
            // The module waits for the application: the call returns, to be resumed later.
            if retval == .incomplete { return SimulationOutcome(result: .incomplete, calls: calls) }
            var decided = false
            let action = entry.control.action(for: retval)
            switch action {
            case .reset:
                (impression, status) = saved[level] ?? (.undecided, mustFail)
            case .ok, .done:
                // pam_authenticate takes even PAM_IGNORE as the status here (its chain is not frozen).
                if impression == .undecided || (impression == .positive && status == .success) {
                    impression = .positive
                    status = retval
                }
                decided = impression == .positive && action == .done
            case .bad, .die:
                if impression != .negative {
                    impression = .negative
                    status = retval == .ignore ? mustFail : retval
                }
                decided = action == .die
            case .ignore:
                break
            case .jump(var n):
                // Skips n lines of this level, each with the deeper lines that follow it.
                while i + 1 < entries.count && entries[i + 1].level >= level && n > 0 {
                    repeat { i += 1 } while i + 1 < entries.count && entries[i + 1].level > level
                    n -= 1
                }
                if n != 0 {  // "bad jump in stack": past the end, or a number that wrapped below -6
                    impression = .negative
                    status = mustFail
                }
            }
            if decided {
                while i + 1 < entries.count && entries[i + 1].level >= level { i += 1 }
            }
        }
        // A stack where nothing said yes does not succeed, whatever the last status was.
        if status == .success && impression != .positive { status = mustFail }
        return SimulationOutcome(result: status, calls: calls)
    }
}
