// Per-user policy state on disk (<state>/users/<user>/state.json), written before any reply reports it.
import Foundation
import Synchronization
import TouchGatePolicy

enum StoredState: Sendable, Equatable {
    case state(UserState)
    /// The file exists but cannot be read as a state: that user's biometrics stay refused until a
    /// password success (fail closed); it is never silently reset to zero.
    case corrupt

    /// The state to build on: an unreadable one counts as locked out (and opted in, since it had
    /// prints), so only a password success ever leaves it.
    var stateOrFailClosed: UserState {
        switch self {
        case .state(let s): return s
        case .corrupt: return UserState(enabled: true, biometryLockedOut: true)
        }
    }
}

final class UserStateStore: Sendable {
    let root: String
    let policy: Policy
    private let cache = Mutex<[String: StoredState]>([:])

    init(stateDirectory: String, policy: Policy) {
        root = stateDirectory
        self.policy = policy
    }

    private func path(_ user: String) -> String { "\(root)/users/\(user)/state.json" }

    func load(_ user: String) -> StoredState {
        if let cached = cache.withLock({ $0[user] }) { return cached }
        let loaded = read(user)
        cache.withLock { $0[user] = loaded }
        return loaded
    }

    private func read(_ user: String) -> StoredState {
        let bytes: [UInt8]?
        do { bytes = try Files.read(path(user), limit: 64 * 1024) } catch { return .corrupt }
        guard let bytes else { return .state(UserState()) }
        guard let state = try? JSONDecoder().decode(UserState.self, from: Data(bytes)) else { return .corrupt }
        // A back-off end pushed far ahead by a clock jump is pulled back to one step from now.
        return .state(policy.backoffCappedToItsStep(state, at: Clock.now()))
    }

    /// Applies `change` under one lock for all users and writes the result durably before
    /// returning it, so `kill -9` after any reply loses nothing.
    @discardableResult
    func update(_ user: String, _ change: (StoredState) -> UserState) throws(StorageError) -> UserState {
        try cache.withLock { (c: inout [String: StoredState]) throws(StorageError) -> UserState in
            let current = c[user] ?? read(user)
            let next = change(current)
            if current == .corrupt {
                // Keep the unreadable file for inspection instead of overwriting it.
                _ = rename(path(user), "\(path(user)).corrupt-\(Clock.now())")
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data: Data
            do { data = try encoder.encode(next) } catch { throw .unsafe("cannot encode state: \(error)") }
            try Files.ensurePrivateDirectory("\(root)/users/\(user)")
            try Files.writeAtomically(Array(data), to: path(user))
            c[user] = .state(next)
            return next
        }
    }
}

/// Wall-clock seconds: the policy's windows are about real time (Apple's 48 h, 156 h).
enum Clock {
    static func now() -> Instant { Instant(time(nil)) }
}
