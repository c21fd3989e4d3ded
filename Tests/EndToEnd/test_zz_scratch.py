import subprocess
import time
import harness
from fprintd_world import BusWorld, fprintd_root


def test_scratch():
    w = BusWorld("virtual_device")
    try:
        w.start_polkit()
        w.polkit("SetAllowed", ["net.reactivated.fprint.device.verify", "net.reactivated.fprint.device.enroll",
                                "net.reactivated.fprint.device.setusername"], sig="as")
        env = harness._env(w.bus_env({"STATE_DIRECTORY": str(w.prints), "FP_VIRTUAL_DEVICE": str(w.reader.path),
                                      "FP_DRIVERS_WHITELIST": "virtual_device", "G_MESSAGES_DEBUG": "all"}))
        proc = subprocess.Popen([str(fprintd_root() / "usr/libexec/fprintd"), "-t"], env=env,
                                stdout=open("/tmp/fprintd-scratch.log", "w"), stderr=subprocess.STDOUT)
        try:
            for _ in range(100):
                try:
                    devs = w.root.call("GetDevices", path="/net/reactivated/Fprint/Manager", iface="net.reactivated.Fprint.Manager")
                    break
                except Exception:
                    time.sleep(0.1)
            dev = devs[0][0]
            w.root.call("Claim", "alice", path=dev)
            mark = w.root.signal_count()
            w.root.call("EnrollStart", "left-index-finger", path=dev)
            time.sleep(0.5)
            w.reader.unplug()
            i = w.root.wait_signal("EnrollStatus", lambda a: a[1], start=mark)
            print("STATUS", w.root.signals[i]["args"])
            print("DEVICES", w.root.call("GetDevices", path="/net/reactivated/Fprint/Manager", iface="net.reactivated.Fprint.Manager"))
            try:
                print("RELEASE", w.root.call("Release", path=dev))
            except Exception as e:
                print("RELEASE ERROR", e)
            print("DEVICES", w.root.call("GetDevices", path="/net/reactivated/Fprint/Manager", iface="net.reactivated.Fprint.Manager"))
        finally:
            proc.terminate()
    finally:
        w.close()
