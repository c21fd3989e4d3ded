// Files under a root directory as a process chrooted there sees them: `..` stops at the root and
// every symlink, an absolute one too, resolves inside it. Each name is opened below the directory
// before it (`openat`, `O_NOFOLLOW`), so a tree under review never leads to a file outside it.
#if canImport(Glibc)
import Glibc
#endif

public struct RootedTree: Sendable {
    /// The root directory on this system (`/` for the running system).
    public let root: String
    /// Linux's limit on symlinks followed in one lookup.
    static let maxLinks = 40
    /// Larger files are not read whole: `read` says so (libpam reads any size; no real pam.d file
    /// or config is anywhere near).
    public static let defaultMaxFileSize = 64 << 20
    public let maxFileSize: Int

    public init(root: String = "/", maxFileSize: Int = Self.defaultMaxFileSize) {
        self.root = root.isEmpty ? "/" : root
        self.maxFileSize = maxFileSize
    }

    /// The path on this system of `path` (absolute, inside the tree), for messages only.
    public func hostPath(_ path: String) -> String {
        if root == "/" { return path }
        return (root.hasSuffix("/") ? String(root.dropLast()) : root) + (path.hasPrefix("/") ? path : "/" + path)
    }

    private struct Node {
        let fd: Int32
        let type: mode_t
    }

    /// Opens `path` inside the tree for reading (a regular file or a directory), nil when it
    /// cannot be reached (`failure` says why: an errno). The caller closes the descriptor.
    private func open(_ path: String, failure: UnsafeMutablePointer<Int32>? = nil) -> Node? {
        func fail(_ error: Int32 = errno) -> Node? {
            failure?.pointee = error
            return nil
        }
        let rootFD = Glibc.open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard rootFD >= 0 else { return fail() }
        var dirs: [Int32] = [rootFD]
        var pending = Array(path.split(separator: "/", omittingEmptySubsequences: true).map(String.init).reversed())
        var links = 0
        var type = S_IFDIR
        defer { for fd in dirs { close(fd) } }
        while let name = pending.popLast() {
            if name == "." { continue }
            if name == ".." {
                if dirs.count > 1 { close(dirs.removeLast()) }
                type = S_IFDIR
                continue
            }
            guard type == S_IFDIR else { return fail(ENOTDIR) }
            let current = dirs[dirs.count - 1]
            var st = stat()
            guard fstatat(current, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return fail() }
            switch st.st_mode & S_IFMT {
            case S_IFLNK:
                links += 1
                guard links <= Self.maxLinks else { return fail(ELOOP) }
                guard let target = Self.readLink(current, name) else { return fail() }
                if target.hasPrefix("/") {
                    while dirs.count > 1 { close(dirs.removeLast()) }
                }
                pending += target.split(separator: "/", omittingEmptySubsequences: true).map(String.init).reversed()
                type = S_IFDIR
            case S_IFDIR, S_IFREG:
                // Never a device or a FIFO: opening one can block or act.
                let flags = (st.st_mode & S_IFMT) == S_IFDIR ? O_DIRECTORY : O_NONBLOCK | O_NOCTTY
                let fd = openat(current, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | flags)
                guard fd >= 0 else { return fail() }
                dirs.append(fd)
                type = st.st_mode & S_IFMT
            default:
                return fail(EINVAL)  // a device, a FIFO, a socket
            }
        }
        let fd = dirs.removeLast()  // the caller's now
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let error = errno
            close(fd)
            return fail(error)
        }
        return Node(fd: fd, type: st.st_mode & S_IFMT)
    }

    private static func readLink(_ dir: Int32, _ name: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4097)
        let n = readlinkat(dir, name, &buffer, buffer.count - 1)
        guard n >= 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public enum Content: Equatable, Sendable {
        case file([UInt8])
        case directory
        /// A regular file longer than `maxFileSize`: not read.
        case tooLarge
    }

    /// A regular file's bytes, or that `path` is a directory or too large; nil when it cannot be read.
    public func read(_ path: String) -> Content? {
        guard let node = open(path) else { return nil }
        return contents(node)
    }

    /// What `node` holds; closes it.
    private func contents(_ node: Node) -> Content? {
        defer { close(node.fd) }
        if node.type == S_IFDIR { return .directory }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(node.fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return nil }
            if n == 0 { break }
            bytes += chunk[0..<n]
            if bytes.count > maxFileSize { return .tooLarge }
        }
        return .file(bytes)
    }

    /// A regular file's bytes; nil when there is none (ENOENT); an errno when it cannot be read.
    public func readFile(_ path: String) -> Result<[UInt8]?, Errno> {
        var error: Int32 = 0
        guard let node = open(path, failure: &error) else {
            return error == ENOENT ? .success(nil) : .failure(Errno(code: error))
        }
        switch contents(node) {
        case .file(let bytes)?: return .success(bytes)
        case .directory?: return .failure(Errno(code: EISDIR))
        case .tooLarge?: return .failure(Errno(code: EFBIG))
        case nil: return .failure(Errno(code: EIO))
        }
    }

    public struct Errno: Error, Equatable, Sendable, CustomStringConvertible {
        public let code: Int32
        public var description: String { String(cString: strerror(code)) }
    }

    public func isRegularFile(_ path: String) -> Bool { kind(path) == S_IFREG }

    public func isDirectory(_ path: String) -> Bool { kind(path) == S_IFDIR }

    private func kind(_ path: String) -> mode_t? {
        guard let node = open(path) else { return nil }
        close(node.fd)
        return node.type
    }

    /// The names in directory `path`, sorted, with each entry's type as a lookup inside the tree
    /// finds it (symlinks followed); nil when it is no directory.
    public func entries(_ path: String) -> [(name: String, isFile: Bool, isDirectory: Bool)]? {
        guard let node = open(path) else { return nil }
        guard node.type == S_IFDIR, let dir = fdopendir(node.fd) else {
            close(node.fd)
            return nil
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        let base = path.hasSuffix("/") ? path : path + "/"
        return names.sorted().map { name in
            let type = kind(base + name)
            return (name, type == S_IFREG, type == S_IFDIR)
        }
    }
}
