# Run once in the image as it is made: the user, the passwords, the machine's name, the test's
# units. Arguments: user, user's password, root's password, hostname.
set -eu
useradd --create-home --shell /bin/bash --groups sudo "$1"
# A second user, with no prints: the start-up loop's PAM calls, and someone else's prints.
useradd --create-home --shell /bin/bash tgother
printf '%s:%s\ntgother:%s\nroot:%s\n' "$1" "$2" "$2" "$3" | chpasswd
echo "$4" > /etc/hostname
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$4" > /etc/hosts
echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" > /etc/fstab
# A machine id now: the first boot is not systemd's "first boot" (no firstboot questions).
rm -f /etc/machine-id
systemd-machine-id-setup
chmod 0755 /usr/local/lib/tg-test/control /usr/local/lib/tg-test/reader-bridge /usr/local/lib/tg-test/starts
systemctl enable tg-test-reader.service tg-test-control.service
