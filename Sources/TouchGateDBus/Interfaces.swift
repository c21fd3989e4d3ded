// The D-Bus interfaces served: fprintd 1.94's Manager and Device (names, arguments, types, errors as
// fprintd's interface files and documentation give them), and the ObjectManager over the devices.

enum FprintNames {
    static let bus = "net.reactivated.Fprint"
    static let root = "/net/reactivated/Fprint"
    static let manager = "/net/reactivated/Fprint/Manager"
    /// Device objects are this and a number: /net/reactivated/Fprint/Device/0 for the first reader.
    static let devicePrefix = "/net/reactivated/Fprint/Device/"
    static let managerInterface = "net.reactivated.Fprint.Manager"
    static let deviceInterface = "net.reactivated.Fprint.Device"
    static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"
}

let fprintIntrospection = """
    <node>
      <interface name="net.reactivated.Fprint.Manager">
        <method name="GetDevices"><arg type="ao" name="devices" direction="out"/></method>
        <method name="GetDefaultDevice"><arg type="o" name="device" direction="out"/></method>
      </interface>
      <interface name="net.reactivated.Fprint.Device">
        <method name="ListEnrolledFingers">
          <arg type="s" name="username" direction="in"/>
          <arg type="as" name="enrolled_fingers" direction="out"/>
        </method>
        <method name="DeleteEnrolledFingers"><arg type="s" name="username" direction="in"/></method>
        <method name="DeleteEnrolledFingers2"/>
        <method name="DeleteEnrolledFinger"><arg type="s" name="finger_name" direction="in"/></method>
        <method name="Claim"><arg type="s" name="username" direction="in"/></method>
        <method name="Release"/>
        <method name="VerifyStart"><arg type="s" name="finger_name" direction="in"/></method>
        <method name="VerifyStop"/>
        <signal name="VerifyFingerSelected"><arg type="s" name="finger_name"/></signal>
        <signal name="VerifyStatus"><arg type="s" name="result"/><arg type="b" name="done"/></signal>
        <method name="EnrollStart"><arg type="s" name="finger_name" direction="in"/></method>
        <method name="EnrollStop"/>
        <signal name="EnrollStatus"><arg type="s" name="result"/><arg type="b" name="done"/></signal>
        <property name="name" type="s" access="read"/>
        <property name="num-enroll-stages" type="i" access="read"/>
        <property name="scan-type" type="s" access="read"/>
        <property name="finger-present" type="b" access="read"/>
        <property name="finger-needed" type="b" access="read"/>
      </interface>
      <interface name="org.freedesktop.DBus.ObjectManager">
        <method name="GetManagedObjects">
          <arg type="a{oa{sa{sv}}}" name="object_paths_interfaces_and_properties" direction="out"/>
        </method>
        <signal name="InterfacesAdded">
          <arg type="o" name="object_path"/><arg type="a{sa{sv}}" name="interfaces_and_properties"/>
        </signal>
        <signal name="InterfacesRemoved">
          <arg type="o" name="object_path"/><arg type="as" name="interfaces"/>
        </signal>
      </interface>
    </node>
    """
