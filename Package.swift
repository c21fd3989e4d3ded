// swift-tools-version:6.0
// touchgate: fingerprint authentication for Linux PAM with LocalAuthentication semantics.
import PackageDescription

// The dependencies come from their repositories, except when TOUCHGATE_SWIFTPM_PACKAGES names a
// directory holding their sources side by side (the Debian source package's swiftpm component,
// made by debian/make-orig-swiftpm): then SwiftPM reads them from there and fetches nothing.
// swift-crypto finds its own dependency, swift-asn1, beside it when SWIFTCI_USE_LOCAL_DEPS is set.
let dependencies: [Package.Dependency]
if let local = Context.environment["TOUCHGATE_SWIFTPM_PACKAGES"], !local.isEmpty {
    dependencies = ["swift-argument-parser", "swift-log", "swift-crypto"].map { .package(path: local + "/" + $0) }
} else {
    // Exact versions: the ones the tests ran and debian/copyright records, so a new release
    // upstream changes nothing until it is taken on purpose. swift-crypto's own dependency,
    // swift-asn1, follows swift-crypto's manifest; debian/make-orig-swiftpm stops, naming it,
    // when it resolves to a version debian/copyright does not record.
    dependencies = [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
    ]
}

// touchgate's own C, in the daemon and the CLI, built as Debian builds C (dpkg-buildflags): stack
// protector, and fortified libc calls where optimization lets the compiler check the sizes.
let hardenedC: [CSetting] = [
    .unsafeFlags(["-fstack-protector-strong"]),
    .define("_FORTIFY_SOURCE", to: "2", .when(configuration: .release)),
]

let package = Package(
    name: "touchgate",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "touchgated", targets: ["touchgated"]),
        .executable(name: "touchgate", targets: ["touchgate"]),
    ],
    dependencies: dependencies,
    targets: [
        // One C header with the wire constants, #included by pam/ as well.
        .target(name: "CTouchGateWire", cSettings: hardenedC),
        // Pure: frames and messages, encode/decode with hard limits.
        .target(name: "TouchGateWire", dependencies: ["CTouchGateWire"]),
        // Pure: the LocalAuthentication rules (docs/spec.md §3–4); time is passed in.
        .target(name: "TouchGatePolicy"),
        // Pure: touchgate.conf parsing and validation, shared by the daemon and `touchgate check-config`.
        .target(name: "TouchGateConfig", dependencies: ["TouchGatePolicy"]),
        // Pure: /etc/pam.d read and run as Linux-PAM would, for `touchgate doctor`.
        .target(name: "TouchGatePAMStack"),
        // Threads and a semaphore on pthreads (no Dispatch in the daemon).
        .target(name: "TouchGateThreads", dependencies: ["CTouchGateLoop"]),
        // GLib for the core's event loop, and GIO's headers (GIO itself is loaded by CTouchGateLibs).
        .systemLibrary(name: "CGIO", pkgConfig: "gobject-2.0", providers: [.apt(["libglib2.0-dev"])]),
        // libfprint-2 (headers from libfprint-2-dev) and GIO, loaded with dlopen when the reader or
        // the D-Bus front-end first needs them, so the daemon's start does not wait for them; the
        // package Depends on libfprint-2-2 (GIO comes with GLib's package).
        .target(name: "CTouchGateLibs", dependencies: ["CGIO"], cSettings: hardenedC),
        .target(name: "TouchGateReader", dependencies: ["CTouchGateLibs", "CGIO", "TouchGateThreads"]),
        // The event loop (a GLib main context on one thread) and the socket calls Glibc lacks.
        .target(name: "CTouchGateLoop", dependencies: ["CGIO"], cSettings: hardenedC),
        // libaudit: authentication records to the Linux audit system (libpam links it too).
        .systemLibrary(name: "CAudit", providers: [.apt(["libaudit-dev"])]),
        // Linux-PAM's application side: the daemon verifies passwords through its own service.
        .systemLibrary(name: "CPAM", providers: [.apt(["libpam0g-dev"])]),
        // Message catalogs (gettext), shared with the PAM module's build; and Swift's side of them.
        .target(name: "CTouchGateL10n", cSettings: hardenedC),
        .target(name: "TouchGateL10n", dependencies: ["CTouchGateL10n"]),
        // The daemon's core: requests, authorization, policy decisions, stores, events; no transport.
        .target(
            name: "TouchGateCore",
            dependencies: [
                "TouchGateWire", "TouchGatePolicy", "TouchGateConfig", "TouchGateReader", "TouchGateThreads",
                "TouchGateL10n", "CTouchGateLoop", "CTouchGateLibs", "CPAM",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // The Unix-socket front-end: frames in, the core's typed results out.
        .target(
            name: "TouchGateSocket",
            dependencies: [
                "TouchGateCore", "TouchGateWire", "CTouchGateLoop",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // fprintd's D-Bus API (net.reactivated.Fprint) over the same core, on the same loop.
        .target(
            name: "TouchGateDBus",
            dependencies: [
                "TouchGateCore", "TouchGateReader", "TouchGateWire", "CGIO", "CTouchGateLibs",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(
            name: "touchgated",
            dependencies: [
                "TouchGateCore", "TouchGateSocket", "TouchGateDBus", "TouchGateReader", "TouchGateConfig", "CAudit",
                "CTouchGateLoop", "TouchGateWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: [
                // Packed relative relocations (DT_RELR, glibc ≥ 2.36): a static Swift runtime carries
                // ~45,000 of them; packed, the loader reads 9 KB instead of 1.1 MB at every start.
                // No dynamic symbol table of our own (swiftc passes -export-dynamic): nothing loads
                // the daemon's symbols, and 7,500 exported names cost 0.6 MB of RSS and a longer
                // search for every symbol the shared libraries resolve at start.
                // The functions that run at start and per authentication linked first, side by
                // side (data/touchgated.order, made and explained by bench/order.py): the kernel
                // maps file pages 64 KB at a time, so code spread over the binary keeps it resident.
                .unsafeFlags(
                    [
                        "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                        "-Xlinker", "--no-export-dynamic",
                        "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/data/touchgated.order",
                        "-Xlinker", "--no-warn-symbol-ordering",
                        // .rodata kept read-only (data/link/rodata.ld says why).
                        "-Xlinker", "\(Context.packageDirectory)/data/link/rodata.ld",
                        // The Swift runtime's C++ library linked in (data/link/libstdc++.so says how).
                        "-L\(Context.packageDirectory)/data/link",
                    ], .when(platforms: [.linux]))
            ]),
        .executableTarget(
            name: "touchgate",
            dependencies: [
                "TouchGateWire", "TouchGateConfig", "TouchGateL10n", "TouchGatePAMStack",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            linkerSettings: [
                .unsafeFlags(
                    ["-use-ld=lld", "-Xlinker", "\(Context.packageDirectory)/data/link/rodata.ld"],
                    .when(platforms: [.linux]))
            ]),
        .testTarget(name: "TouchGateWireTests", dependencies: ["TouchGateWire"]),
        .testTarget(name: "TouchGatePolicyTests", dependencies: ["TouchGatePolicy"]),
        .testTarget(name: "TouchGateConfigTests", dependencies: ["TouchGateConfig"]),
        .testTarget(name: "TouchGateL10nTests", dependencies: ["TouchGateL10n"]),
        // Test doubles shared by the core and socket tests: a scripted reader, accounts, a clock, passwords.
        .target(
            name: "TouchGateTestSupport",
            dependencies: [
                "TouchGateCore", "TouchGateReader", "TouchGatePolicy", "TouchGateWire", "TouchGateThreads",
                .product(name: "Logging", package: "swift-log"),
            ], path: "Tests/TouchGateTestSupport"),
        .testTarget(
            name: "TouchGateCoreTests",
            dependencies: [
                "TouchGateCore", "TouchGateTestSupport", .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "TouchGateSocketTests", dependencies: ["TouchGateSocket", "TouchGateCore", "TouchGateTestSupport"]),
        .testTarget(name: "TouchGatePAMStackTests", dependencies: ["TouchGatePAMStack"]),
        .testTarget(
            name: "TouchGateDBusTests",
            dependencies: [
                "TouchGateDBus", "TouchGateCore", "TouchGateReader", "TouchGateWire", "CGIO", "TouchGateTestSupport",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
