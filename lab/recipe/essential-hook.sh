#!/bin/sh
# Runs before the kernel package is unpacked: the initramfs is then built once, small.
# $1 = root of the image being built, $2 = architecture.
set -eu
root="$1"
arch="$2"
mkdir -p "$root/etc/initramfs-tools/conf.d"
echo 'MODULES=list' > "$root/etc/initramfs-tools/conf.d/cpuinfer-lab.conf"
echo 'COMPRESS=gzip' >> "$root/etc/initramfs-tools/conf.d/cpuinfer-lab.conf"
printf '%s\n' virtio_pci virtio_blk ext4 > "$root/etc/initramfs-tools/modules"
if [ "$arch" = arm64 ]; then
  printf '%s\n' virtio_mmio >> "$root/etc/initramfs-tools/modules"
fi
