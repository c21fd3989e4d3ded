// Where Linux-PAM looks for a module named without a directory, under a root directory.
#if canImport(Glibc)
import Glibc
#endif

public struct ModuleLocator: Sendable {
    /// The security directories that exist under the root (multiarch first, as Debian installs).
    public let directories: [String]
    let root: String

    public init(root: String = "/") {
        self.root = root
        var found: [String] = []
        for base in ["lib", "usr/lib", "lib64", "usr/lib64"] {
            let dir = PAMDirectory.join(root, base)
            for sub in Self.entries(of: dir) where sub.contains("-linux-") {
                let candidate = PAMDirectory.join(PAMDirectory.join(dir, sub), "security")
                if Self.isDirectory(candidate) { found.append(candidate) }
            }
            let plain = PAMDirectory.join(dir, "security")
            if Self.isDirectory(plain) { found.append(plain) }
        }
        directories = found
    }

    /// Whether `module` (a name such as `pam_unix.so`, or an absolute path) exists. With no security
    /// directory under the root at all (a bare fixture tree) nothing can be known: true.
    public func exists(_ module: String) -> Bool {
        if module.hasPrefix("/") { return Self.isFile(PAMDirectory.join(root, String(module.dropFirst()))) }
        if directories.isEmpty { return true }
        return directories.contains { Self.isFile(PAMDirectory.join($0, module)) }
    }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    static func isFile(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    static func entries(of dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let entry = readdir(d) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }
}
