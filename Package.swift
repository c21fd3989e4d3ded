// swift-tools-version:6.0
// touchgate: fingerprint authentication for Linux PAM with LocalAuthentication semantics.
import PackageDescription

let package = Package(
    name: "touchgate",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "touchgated", targets: ["touchgated"]),
        .executable(name: "touchgate", targets: ["touchgate"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    ],
    targets: [
        // One C header with the wire constants, #included by pam/ as well.
        .target(name: "CTouchGateWire"),
        // Pure: frames and messages, encode/decode with hard limits.
        .target(name: "TouchGateWire", dependencies: ["CTouchGateWire"]),
        // Pure: the LocalAuthentication rules (SPEC §3–4); time is passed in.
        .target(name: "TouchGatePolicy"),
        // Pure: touchgate.conf parsing and validation, shared by the daemon and `touchgate check-config`.
        .target(name: "TouchGateConfig", dependencies: ["TouchGatePolicy"]),
        // Pure: /etc/pam.d read and run as Linux-PAM would, for `touchgate doctor`.
        .target(name: "TouchGatePAMStack"),
        // libfprint-2 and GLib, for the reader only.
        .systemLibrary(name: "CFPrint", pkgConfig: "libfprint-2",
                       providers: [.apt(["libfprint-2-dev"])]),
        .target(name: "TouchGateReader", dependencies: ["CFPrint"]),
        // Linux-PAM's application side: the daemon verifies passwords through its own service.
        .systemLibrary(name: "CPAM", providers: [.apt(["libpam0g-dev"])]),
        .target(name: "TouchGateDaemon", dependencies: [
            "TouchGateWire", "TouchGatePolicy", "TouchGateConfig", "TouchGateReader", "CPAM",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        .executableTarget(name: "touchgated", dependencies: [
            "TouchGateDaemon",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "touchgate", dependencies: [
            "TouchGateWire", "TouchGateConfig", "TouchGatePAMStack",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        .testTarget(name: "TouchGateWireTests", dependencies: ["TouchGateWire"]),
        .testTarget(name: "TouchGatePolicyTests", dependencies: ["TouchGatePolicy"]),
        .testTarget(name: "TouchGateConfigTests", dependencies: ["TouchGateConfig"]),
        .testTarget(name: "TouchGateDaemonTests", dependencies: ["TouchGateDaemon"]),
        .testTarget(name: "TouchGatePAMStackTests", dependencies: ["TouchGatePAMStack"]),
    ],
    swiftLanguageModes: [.v6]
)
