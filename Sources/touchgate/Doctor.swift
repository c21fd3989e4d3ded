// doctor: one screen that says what is wrong with the installation and how to fix it.
import ArgumentParser
import TouchGateConfig
import TouchGateL10n
import TouchGatePAMStack
import TouchGateWire

struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the daemon, the reader, the config, PAM and the user; say how to fix what is wrong.",
        discussion: """
            Checks that touchgated answers and has a reader, that touchgate.conf is valid, which PAM \
            services offer the fingerprint and whether their stacks let a password clear a lockout, \
            that the daemon's password service checks the same passwords as login without \
            pam_touchgate.so, where pam_faillock sits, and that the user enabled fingerprints and \
            enrolled one. Exit status 0 only when nothing is wrong.
            """)

    @ParentCommand var root: Touchgate
    @OptionGroup var user: UserOption
    @Flag(name: .long, help: "Print the findings as one JSON document.") var json = false
    @Option(
        name: .customLong("root"),
        help: ArgumentHelp(
            "Read /etc/pam.d, the config and the PAM modules under this directory instead of /.", valueName: "dir"))
    var rootDirectory: String = "/"

    func validate() throws {
        guard !rootDirectory.isEmpty, !rootDirectory.utf8.contains(0) else {
            throw ValidationError(L("--root must be a directory.", cli))
        }
    }

    func run() throws {
        let user = try user.resolved()
        var checks: [DoctorCheck] = []
        let (configCheck, passwordService) = DoctorChecks.config(root: rootDirectory)
        checks.append(configCheck)
        let client = DaemonClient(socketPath: root.socketPath)
        let devices = DoctorChecks.daemon(client)
        checks += devices.checks
        let review = PAMReview.review(
            root: rootDirectory, passwordService: passwordService,
            modules: ModuleLocator(root: rootDirectory))
        checks += DoctorChecks.pam(review)
        checks += DoctorChecks.passwordService(review.passwordService)
        checks.append(DoctorChecks.faillock(review))
        checks += devices.reachable ? DoctorChecks.user(user, client) : [DoctorCheck.skipped("user", user)]
        let report = DoctorReport(checks: checks)
        if json { say(report.json()) } else { for line in report.lines() { say(line) } }
        if report.problems > 0 { throw ExitCode.failure }
    }
}
