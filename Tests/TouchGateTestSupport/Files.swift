// Private temporary directories and plain file facts, planted and read without the code under test.
import FoundationEssentials
import Glibc

public struct TestSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Runs `body` with a fresh directory under /tmp, removed afterwards (whatever was planted in it).
public func withTemporaryDirectory<T>(
    isolation: isolated (any Actor)? = #isolation,
    _ body: (String) async throws -> T
) async throws -> T {
    var template = Array("/tmp/touchgate-tests.XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw TestSetupError("mkdtemp: \(errno)") }
    let dir = String(cString: made)
    defer { removeTree(dir) }
    return try await body(dir)
}

/// Removes `path` and everything under it, never following a symlink out of it.
public func removeTree(_ path: String) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    if (st.st_mode & S_IFMT) == S_IFDIR {
        for name in directoryEntries(path) { removeTree("\(path)/\(name)") }
        rmdir(path)
    } else {
        unlink(path)
    }
}

/// Permission bits of `path` itself (never through a symlink), or nil when it does not exist.
public func permissions(_ path: String) -> mode_t? {
    var st = stat()
    guard lstat(path, &st) == 0 else { return nil }
    return st.st_mode & 0o7777
}

/// The file type bits of `path` itself (S_IFREG, S_IFDIR, S_IFLNK), or nil when it does not exist.
public func fileType(_ path: String) -> mode_t? {
    var st = stat()
    guard lstat(path, &st) == 0 else { return nil }
    return st.st_mode & S_IFMT
}

public func exists(_ path: String) -> Bool { fileType(path) != nil }

/// Writes `bytes` plainly (not through the code under test) with the given mode.
public func plantFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    guard fd >= 0 else { throw TestSetupError("create \(path): \(errno)") }
    defer { close(fd) }
    let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    guard written == bytes.count else { throw TestSetupError("write \(path): \(errno)") }
    guard fchmod(fd, mode) == 0 else { throw TestSetupError("chmod \(path): \(errno)") }
}

public func plantFile(_ path: String, _ text: String, mode: mode_t = 0o600) throws {
    try plantFile(path, Array(text.utf8), mode: mode)
}

/// A Unix socket bound at `path` (closed again: the file stays).
public func plantSocket(_ path: String) throws {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSetupError("socket: \(errno)") }
    defer { close(fd) }
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    guard path.utf8.count < MemoryLayout.size(ofValue: addr.sun_path) else { throw TestSetupError("\(path): too long") }
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
        for (i, b) in path.utf8.enumerated() { raw[i] = b }
    }
    let bound = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard bound == 0 else { throw TestSetupError("bind \(path): \(errno)") }
}

public func plantSymlink(at path: String, to target: String) throws {
    guard symlink(target, path) == 0 else { throw TestSetupError("symlink \(path): \(errno)") }
}

/// A directory with exactly `mode` (creating the missing parents 0700).
public func plantDirectory(_ path: String, mode: mode_t = 0o700) throws {
    var prefix = ""
    for part in path.split(separator: "/") {
        prefix += "/\(part)"
        if mkdir(prefix, 0o700) != 0 && errno != EEXIST { throw TestSetupError("mkdir \(prefix): \(errno)") }
    }
    guard chmod(path, mode) == 0 else { throw TestSetupError("chmod \(path): \(errno)") }
}

/// Changes the owner of `path` itself (tests run as root).
public func changeOwner(_ path: String, uid: uid_t, gid: gid_t = 0) throws {
    guard lchown(path, uid, gid) == 0 else { throw TestSetupError("chown \(path): \(errno)") }
}

public func changeMode(_ path: String, _ mode: mode_t) throws {
    guard chmod(path, mode) == 0 else { throw TestSetupError("chmod \(path): \(errno)") }
}

/// The bytes of a file (following symlinks: used to check what a link's target holds).
public func contents(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return n == 0 ? out : nil }
        out += chunk[0..<n]
    }
}

/// The names in a directory, sorted, "." and ".." excepted.
public func directoryEntries(_ path: String) -> [String] {
    guard let d = opendir(path) else { return [] }
    defer { closedir(d) }
    var names: [String] = []
    while let e = readdir(d) {
        let name = withUnsafeBytes(of: e.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
}

/// Decodes a JSON file written by the code under test (state files, status documents).
public func decodeJSON<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws -> T {
    try JSONDecoder().decode(type, from: Data(bytes))
}
