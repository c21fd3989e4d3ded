// One thing at a time per user, for work whose check and change must not interleave with another
// request's for the same user (a password's back-off, the keyring file).

/// Runs each user's bodies one after another, in the order they asked; other users' run beside.
/// A body waits for those ahead of it, each bounded by its own deadlines.
@CoreActor final class UserTurns {
    private var running: [String: OneShot<Void>] = [:]

    func run<T>(_ user: String, _ body: () async -> T) async -> T {
        while let ahead = running[user] { await ahead.wait() }
        let mine = OneShot<Void>()
        running[user] = mine
        defer {
            running[user] = nil
            mine.set(())
        }
        return await body()
    }
}
