"""The source package as Debian's build machines take it: made from this checkout with its
orig-swiftpm component (the Swift dependencies' sources, scripts/source-package.sh), lintian-clean,
and built with no network. The install test's own packages are that build (machine.build_packages:
unpacked in a fresh directory, `dpkg-buildpackage -us -uc -b` inside `unshare --net`, a fresh HOME
and no git configuration); these steps check what it made and how."""

import re

import pytest

import checks
import machine as m

LINTIAN_LIMIT = 900  # s: lintian unpacks and reads the 47 MB of the dependencies' sources


def dsc_files(dsc):
    """The file names the .dsc lists."""
    text = dsc.read_text()
    files = text.split("\nFiles:\n", 1)[1]
    return {line.split()[2] for line in files.splitlines() if line.startswith(" ")}


@pytest.fixture(scope="module")
def source(packages):
    """The .dsc the packages were built from."""
    return next((m.WORK / "build" / "source").glob("touchgate_*.dsc"))


def test_01_the_source_package_carries_the_swift_dependencies_as_its_orig_swiftpm_component(source):
    version = re.search(r"^Version: (\S+)$", source.read_text(), re.M).group(1)
    upstream = version.rsplit("-", 1)[0]
    assert re.search(r"^Format: 3\.0 \(quilt\)$", source.read_text(), re.M)
    assert dsc_files(source) == {"touchgate_%s.orig.tar.xz" % upstream,
                                 "touchgate_%s.orig-swiftpm.tar.xz" % upstream,
                                 "touchgate_%s.debian.tar.xz" % version}
    upstream_names = m.run(["tar", "-tJf", source.parent / ("touchgate_%s.orig.tar.xz" % upstream)]).stdout.split()
    assert "touchgate-%s/Package.swift" % upstream in upstream_names
    # The upstream tarball is the project's own files: no debian/, no dependency, no build output.
    assert not [n for n in upstream_names if re.match(r"[^/]+/(debian|swiftpm|\.build[^/]*)/", n)]
    component = source.parent / ("touchgate_%s.orig-swiftpm.tar.xz" % upstream)
    names = set(m.run(["tar", "-tJf", component]).stdout.split())
    versions = m.run(["tar", "-xJOf", component, "swiftpm/versions"]).stdout
    pins = [line.split() for line in versions.splitlines() if line and not line.startswith("#")]
    m.log("orig-swiftpm: %.1f MB, %d files: %s" % (
        component.stat().st_size / 1e6, len(names), ", ".join("%s %s" % (p[0], p[1]) for p in pins)))
    assert {p[0] for p in pins} == {"swift-argument-parser", "swift-log", "swift-crypto", "swift-asn1"}
    for identity, version_, revision, url in pins:
        assert re.fullmatch(r"[0-9a-f]{40}", revision) and url.startswith("https://"), (identity, revision, url)
        assert "swiftpm/%s/Package.swift" % identity in names
        assert "swiftpm/%s/LICENSE.txt" % identity in names
    # Sources only: no repository data.
    assert not [n for n in names if "/.git/" in n]


def test_02_lintian_reports_no_error_or_warning_on_the_source_package(source):
    tags, out = checks.lintian(source, "source", LINTIAN_LIMIT)
    assert not [t for t in tags if t[0] in "EW"], out


def test_03_the_packages_were_built_with_no_network_from_the_source_package_alone(packages):
    debs, _ = packages
    out = m.WORK / "build"
    # What the build had, recorded in its own namespace: no interface but the loopback, and no
    # repository it could fetch from.
    net = (out / "net-dev").read_text()
    interfaces = [line.split(":")[0].strip() for line in net.splitlines() if ":" in line]
    assert interfaces == ["lo"], net
    fetch = (out / "fetch").read_text()
    assert not fetch.endswith("exit 0\n") and "refs/" not in fetch, fetch
    log = (out / "build.log").read_text()
    # SwiftPM read the dependencies from swiftpm/: it fetched and cloned nothing.
    assert not re.search(r"^(Fetching|Cloning|Computing version) ", log, re.M), log[-4000:]
    # The build kept its caches in its own tree, not in HOME.
    home = out / "home"
    assert not list(home.iterdir()), sorted(str(x) for x in home.rglob("*"))
    assert set(debs) >= {"touchgate", "libpam-touchgate"}
