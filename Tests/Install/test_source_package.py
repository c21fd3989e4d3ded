"""The source package as Debian's build machines take it: made from this checkout with its
orig-swiftpm component (the Swift dependencies' sources, scripts/source-package.sh), lintian-clean,
unpacked in a fresh directory and built with `dpkg-buildpackage -us -uc -b` in a network namespace
with no interface but a loopback that is down, a fresh HOME and no git configuration (so no URL
rewriting to a local mirror either): the same packages come out as from the checkout's build.

Runs after the install steps (whose `packages` it compares with); its builds share no work with
theirs, as SwiftPM rebuilds whatever it finds at another path."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import machine as m

SOURCE_LIMIT = 900  # s: resolving the dependencies and compressing their sources
LINTIAN_LIMIT = 900  # s: lintian unpacks and reads the 47 MB of the dependencies' sources
# s: a clean release build, the dependencies included (BoringSSL's C among them); the checkout's
# build reuses its compiled dependencies from one run to the next, this one cannot.
OFFLINE_BUILD_LIMIT = 2 * m.BUILD_LIMIT


def offline_env(home):
    """A build environment with nothing of this machine's: fresh HOME, no git configuration."""
    swift = shutil.which("swift") or "/opt/swift/usr/bin/swift"
    return {"PATH": "%s:/usr/sbin:/usr/bin:/sbin:/bin" % Path(swift).parent, "LANG": "C.UTF-8",
            "HOME": str(home), "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def dsc_files(dsc):
    """The file names the .dsc lists."""
    text = dsc.read_text()
    files = text.split("\nFiles:\n", 1)[1]
    return {line.split()[2] for line in files.splitlines() if line.startswith(" ")}


def contents(deb):
    """A .deb's paths with their modes (sizes and bytes differ between builds at other paths)."""
    rows = m.run(["dpkg-deb", "-c", deb]).stdout.splitlines()
    return sorted((row.split()[0], row.split(None, 5)[5].split(" -> ")[0]) for row in rows)


@pytest.fixture(scope="module")
def source():
    out = m.WORK / "source"
    if out.exists():
        shutil.rmtree(out)
    t0 = m.now()
    p = m.run([m.REPO / "scripts" / "source-package.sh", out], limit=SOURCE_LIMIT)
    m.log("made the source package in %.0f s" % (m.now() - t0))
    return Path(p.stdout.strip().splitlines()[-1])


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
    t0 = m.now()
    p = m.run(["lintian", "-I", "-E", "--pedantic", "--show-overrides", source], limit=LINTIAN_LIMIT, check=False)
    tags = [line for line in p.stdout.splitlines() if re.match(r"^[EWIPXO]: ", line)]
    m.log("lintian (source, %.0f s): " % (m.now() - t0) + ", ".join(
        "%d %s" % (sum(1 for t in tags if t.startswith(k + ":")), name)
        for k, name in [("E", "errors"), ("W", "warnings"), ("I", "info"), ("P", "pedantic"), ("O", "overridden")]))
    for tag in sorted({t for t in tags if t[0] in "EWIPO"}):
        m.log("  " + tag)
    assert not [t for t in tags if t[0] in "EW"], p.stdout


def test_03_it_builds_with_no_network_into_the_same_packages(source, packages):
    debs, _ = packages
    work = m.WORK / "offline"
    if work.exists():
        shutil.rmtree(work)
    home = work / "home"
    home.mkdir(parents=True)
    tree = work / "touchgate"
    m.run(["dpkg-source", "-x", source, tree])
    env = offline_env(home)

    # What the build gets: no interface but the loopback, and no repository it could fetch from.
    probe = m.run(["unshare", "--net", "sh", "-c",
                   "cat /proc/net/dev; git ls-remote https://github.com/apple/swift-log"], env=env, check=False)
    interfaces = [line.split(":")[0].strip() for line in probe.stdout.splitlines() if ":" in line]
    assert interfaces == ["lo"], probe.stdout
    assert probe.returncode != 0 and "swift-log" not in probe.stdout, probe.stdout + probe.stderr

    t0 = m.now()
    p = subprocess.run(["unshare", "--net", "dpkg-buildpackage", "-us", "-uc", "-b"], cwd=tree, env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=OFFLINE_BUILD_LIMIT)
    (work / "build.log").write_text(p.stdout)
    assert p.returncode == 0, "dpkg-buildpackage: exit %d\n%s" % (p.returncode, "\n".join(p.stdout.splitlines()[-40:]))
    m.log("built the packages from the source package with no network in %.0f s" % (m.now() - t0))
    # SwiftPM read the dependencies from swiftpm/: it fetched and cloned nothing.
    assert not re.search(r"^(Fetching|Cloning|Computing version) ", p.stdout, re.M), p.stdout
    # The build keeps its caches in its own tree, not in HOME.
    assert not list(home.iterdir()), sorted(str(x) for x in home.rglob("*"))

    offline = {d.name.split("_")[0]: d for d in work.glob("*.deb")}
    assert set(offline) == set(debs)
    for name in ("touchgate", "libpam-touchgate"):
        assert contents(offline[name]) == contents(debs[name]), name
        for field in ("Version", "Depends", "Architecture"):
            assert m.run(["dpkg-deb", "-f", offline[name], field]).stdout == m.run(
                ["dpkg-deb", "-f", debs[name], field]).stdout, (name, field)
