/* SPDX-License-Identifier: MIT */
/* bam nvme list|bind|unbind: the NVMe PCI functions and their drivers (bam/nvme.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "bam/nvme.h"
#include "cli_util.h"
#include "cmds.h"

static void nvme_usage(FILE *f)
{
	fprintf(f, "usage: bam nvme list\n"
		   "       bam nvme bind BDF [--force]   give the function to vfio-pci (for --backend=nvme:BDF);\n"
		   "                                     refuses one whose namespaces are mounted, partitioned or\n"
		   "                                     hold a file system, unless --force\n"
		   "       bam nvme unbind BDF           give it back to the kernel's nvme driver\n"
		   "(bind/unbind need root; docs/BACKENDS.md, the nvme back end)\n");
}

int bam_cmd_nvme(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		nvme_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "list") && argc == 2) {
		struct bam_nvme_fn fn[64];
		int n = bam_nvme_list(fn, 64);
		if (n < 0) {
			cli_eprintf("bam nvme list: /sys/bus/pci: %s\n", strerror(-n));
			return 1;
		}
		if (n == 0) {
			printf("no NVMe PCI functions\n");
			return 0;
		}
		printf("%-13s %-9s %-10s %5s %4s  %s\n", "BDF", "vid:did", "driver", "group", "numa", "namespaces / state");
		for (int i = 0; i < n && i < 64; i++) {
			char grp[16];
			snprintf(grp, sizeof(grp), "%d", fn[i].iommu_group);
			printf("%-13s %04x:%04x %-10s %5s %4d  %s%s%s%s\n", fn[i].bdf, fn[i].vendor, fn[i].device,
			       fn[i].driver[0] ? fn[i].driver : "(none)", fn[i].iommu_group < 0 ? "-" : grp, fn[i].numa_node,
			       !strcmp(fn[i].driver, "vfio-pci") ? "ready for --backend=nvme:" : "", 
			       !strcmp(fn[i].driver, "vfio-pci") ? fn[i].bdf : fn[i].namespaces,
			       fn[i].in_use ? "  IN USE: " : "", fn[i].in_use ? fn[i].in_use_why : "");
		}
		if (n > 64)
			printf("(%d more)\n", n - 64);
		return 0;
	}
	if ((!strcmp(argv[1], "bind") || !strcmp(argv[1], "unbind")) && (argc == 3 || argc == 4)) {
		const int bind = !strcmp(argv[1], "bind");
		int force = 0;
		if (argc == 4) {
			if (!bind || strcmp(argv[3], "--force")) {
				nvme_usage(stderr);
				return 2;
			}
			force = 1;
		}
		char err[512];
		int rc = bam_nvme_bind(argv[2], bind, force, err, sizeof(err));
		if (rc) {
			cli_eprintf("bam nvme %s: %s\n", argv[1], err);
			return 1;
		}
		printf("%s: %s\n", argv[2], bind ? "bound to vfio-pci" : "back with the kernel's nvme driver");
		return 0;
	}
	nvme_usage(stderr);
	return 2;
}
