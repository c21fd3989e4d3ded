// Where Linux-PAM looks for a module named without a directory, under a root directory.

public struct ModuleLocator: Sendable {
    /// The security directories that exist under the root (multiarch first, as Debian installs),
    /// as paths on this system.
    public let directories: [String]
    /// The same, inside the tree.
    let inside: [String]
    let tree: RootedTree

    public init(root: String = "/") {
        tree = RootedTree(root: root)
        var found: [String] = []
        for base in ["/lib", "/usr/lib", "/lib64", "/usr/lib64"] {
            for sub in tree.entries(base) ?? [] where sub.isDirectory && sub.name.contains("-linux-") {
                let candidate = base + "/" + sub.name + "/security"
                if tree.isDirectory(candidate) { found.append(candidate) }
            }
            let plain = base + "/security"
            if tree.isDirectory(plain) { found.append(plain) }
        }
        inside = found
        directories = found.map(tree.hostPath)
    }

    /// Whether `module` (a name such as `pam_unix.so`, or an absolute path) exists. With no security
    /// directory under the root at all (a bare fixture tree) nothing can be known: true.
    public func exists(_ module: String) -> Bool {
        if module.hasPrefix("/") { return tree.isRegularFile(module) }
        if inside.isEmpty { return true }
        guard !module.isEmpty else { return false }
        return inside.contains { tree.isRegularFile($0 + "/" + module) }
    }
}
