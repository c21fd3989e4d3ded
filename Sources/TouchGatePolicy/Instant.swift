// Time as plain Unix seconds, and the one definition of "inside a window" every rule uses.

/// Unix time in whole seconds. The daemon reads the clock; the policy only compares numbers,
/// so tests can name every instant explicitly.
public typealias Instant = Int64

/// A window of `length` seconds that started at `start` is open at `start ... start+length-1`
/// and closed from `start+length` on. A start later than `now` means the clock went backwards:
/// the window counts as closed (fail closed — we cannot know how much time really passed).
/// A length of zero or less is never open.
func isWithinWindow(startedAt start: Instant?, length: Int64, now: Instant) -> Bool {
    guard let start, start <= now, length > 0 else { return false }
    // Subtraction, not `start + length`, so no instant near Int64.max can overflow.
    let (elapsed, overflow) = now.subtractingReportingOverflow(start)
    return !overflow && elapsed < length
}

extension Int {
    /// Counters stop at Int.max instead of trapping: a hostile or very old state file must not crash the daemon.
    func incrementedSaturating() -> Int {
        let (next, overflow) = addingReportingOverflow(1)
        return overflow ? .max : next
    }
}

extension Int64 {
    /// `self + other`, stopping at the bounds instead of trapping.
    func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }

    /// `self - other`, stopping at the bounds instead of trapping.
    func subtractingSaturating(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other < 0 ? .max : .min
    }
}
