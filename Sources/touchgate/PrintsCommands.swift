// prints export: sealed prints written back in the clear, in fprintd's format, before going back
// to fprintd (docs/SECURITY.md §6). The daemon's own code does it (it alone holds the TPM's key).
import ArgumentParser
import TouchGateL10n
#if canImport(Glibc)
import Glibc
#endif

struct Prints: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The enrolled prints on disk.", subcommands: [PrintsExport.self])
}

struct PrintsExport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write sealed prints back in the clear, as fprintd keeps them (root; touchgated stopped).",
        discussion: """
            Run it before going back to fprintd, or before turning sealing off (seal = no): fprintd \
            cannot read sealed prints. Stop touchgated first: \
            systemctl stop touchgated.socket touchgated.service. \
            It leaves the mark prints-exported in touchgated's state directory: until that file is \
            removed, touchgated starts only with seal = no, so none seals the prints again.
            """)

    @ParentCommand var root: Touchgate
    @Option(name: .long, help: ArgumentHelp("touchgated's state directory.", valueName: "dir")) var stateDir: String?
    @Option(name: .long, help: ArgumentHelp("The print store.", valueName: "dir")) var printStore: String?
    @Option(name: .long, help: ArgumentHelp("touchgate.conf.", valueName: "file")) var config: String?

    /// The installed daemon, else the one built beside this command.
    static func daemonPath() -> String? {
        let installed = "/usr/libexec/touchgate/touchgated"
        if access(installed, X_OK) == 0 { return installed }
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let me = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = me.lastIndex(of: "/") else { return nil }
        let beside = String(me[..<slash]) + "/touchgated"
        return access(beside, X_OK) == 0 ? beside : nil
    }

    func run() throws {
        guard Caller.isRoot else { throw Failure(L("touchgate prints export must be run as root", cli)) }
        // The daemon rewrites prints as it runs: both at once could leave one in either form.
        if (try? DaemonClient(socketPath: root.socketPath).call(.devices, [])) != nil {
            throw Failure(
                L("touchgated is running: stop it first (systemctl stop touchgated.socket touchgated.service)", cli))
        }
        guard let daemon = Self.daemonPath() else { throw Failure(L("touchgated is not installed", cli)) }
        var arguments = [daemon, "--export-prints"]
        if let stateDir { arguments += ["--state-dir", stateDir] }
        if let printStore { arguments += ["--print-store", printStore] }
        if let config { arguments += ["--config", config] }
        var argv = arguments.map { strdup($0) } + [nil]
        execv(daemon, &argv)
        let e = errno
        throw Failure("\(daemon): \(systemError(e, cli))")
    }
}
