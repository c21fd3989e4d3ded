// Whether a client runs in a remote login session, as logind recorded it (docs/spec.md §9): the
// session its process's control group names (`…/session-ID.scope`), and that session's record
// (`REMOTE=1`). Neither is the client's to change, unlike its environment: a remote session's
// `sudo` started without SSH_CONNECTION is still in that session.
import Glibc

public struct LoginSessions: Sendable {
    /// Where processes are (`/proc`) and where logind keeps its session records.
    let proc: String
    let sessions: String

    public init(proc: String = "/proc", sessions: String = "/run/systemd/sessions") {
        self.proc = proc
        self.sessions = sessions
    }

    /// The remote host of the login session `pid` runs in ("remote" when logind names none); nil
    /// when that session is local, or the process is in none (a service, a user's own manager),
    /// or the machine has no logind: then only what the client says (its RHOST) decides.
    public func remoteHost(ofProcess pid: Int32) -> String? {
        guard pid > 0, let cgroup = Self.smallFile("\(proc)/\(pid)/cgroup"),
            let id = Self.sessionID(inCgroups: cgroup), let record = Self.smallFile("\(sessions)/\(id)")
        else { return nil }
        let fields = Self.fields(record)
        guard fields["REMOTE"] == "1" else { return nil }
        return fields["REMOTE_HOST"].flatMap { $0.isEmpty ? nil : $0 } ?? "remote"
    }

    /// The session ID in a `/proc/PID/cgroup`: from the unified hierarchy's line (`0::PATH`), else
    /// from systemd's own (`N:name=systemd:PATH`, where systemd runs on the older hierarchies and
    /// the unified one is mounted beside them); nil when neither names a session scope.
    static func sessionID(inCgroups text: String) -> String? {
        var unified: Substring?, systemd: Substring?
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            if parts[0] == "0" && parts[1].isEmpty { unified = parts[2] }
            if parts[1] == "name=systemd" { systemd = parts[2] }
        }
        for path in [unified, systemd].compactMap({ $0 }) {
            for part in path.split(separator: "/").reversed()
            where part.hasPrefix("session-") && part.hasSuffix(".scope") {
                let id = part.dropFirst("session-".count).dropLast(".scope".count)
                // logind's IDs are letters and digits: nothing else is taken as a file name.
                guard !id.isEmpty, id.utf8.allSatisfy({ isASCIIAlnum($0) }) else { return nil }
                return String(id)
            }
        }
        return nil
    }

    /// A session record's `KEY=value` lines.
    static func fields(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            out[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        return out
    }

    private static func isASCIIAlnum(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
    }

    /// A small text file, read whole (nil: missing, unreadable or larger than 16 KB).
    private static func smallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= 16384 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { return nil }
            if n == 0 { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return nil
    }
}
