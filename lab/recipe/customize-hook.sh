#!/bin/sh
# Makes the minbase tree a bootable, reachable lab host.
# $1 = root of the image, $2 = file with the lab's ssh public key.
set -eu
root="$1"
pubkey="$2"

# slirp's fixed layout: static addressing boots faster than DHCP and needs no client. No DNS:
# the guest reaches nothing outside (restrict=on), and a resolver that times out stalls sudo.
mkdir -p "$root/etc/systemd/network"
cat > "$root/etc/systemd/network/10-lab.network" <<NET
[Match]
Type=ether

[Network]
Address=10.0.2.15/24
Gateway=10.0.2.2
NET
chroot "$root" systemctl enable systemd-networkd.service
chroot "$root" systemctl mask systemd-networkd-wait-online.service
for timer in apt-daily.timer apt-daily-upgrade.timer fstrim.timer e2scrub_all.timer; do
  chroot "$root" systemctl mask "$timer"
done

# node_exporter is baked in (amd64) for the metrics role, which enables it; a host without that
# role exposes no port.
if [ -e "$root/lib/systemd/system/prometheus-node-exporter.service" ]; then
  chroot "$root" systemctl disable prometheus-node-exporter.service
fi

# HAProxy likewise: the frontdoor role enables it on the front door hosts only.
if [ -e "$root/lib/systemd/system/haproxy.service" ]; then
  chroot "$root" systemctl disable haproxy.service
fi

# tuned likewise (amd64): it would apply its recommended profile on every lab host; tests start it
if [ -e "$root/lib/systemd/system/tuned.service" ]; then
  chroot "$root" systemctl disable tuned.service
fi

mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\n' > "$root/etc/systemd/journald.conf.d/lab.conf"
printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' > "$root/etc/fstab"
: > "$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id"
echo lab > "$root/etc/hostname"

# Root and a sudo user both take the lab key: roles are tested with become, as fleets run them.
install -d -m 0700 "$root/root/.ssh"
install -m 0600 "$pubkey" "$root/root/.ssh/authorized_keys"
chroot "$root" useradd --create-home --shell /bin/bash --groups sudo lab
install -d -m 0700 "$root/home/lab/.ssh"
install -m 0600 "$pubkey" "$root/home/lab/.ssh/authorized_keys"
chroot "$root" chown -R lab:lab /home/lab/.ssh
echo 'lab ALL=(ALL) NOPASSWD:ALL' > "$root/etc/sudoers.d/lab"
chmod 0440 "$root/etc/sudoers.d/lab"
printf 'UseDNS no\nPasswordAuthentication no\n' > "$root/etc/ssh/sshd_config.d/lab.conf"

rm -f "$root/var/cache/apt/archives/"*.deb
