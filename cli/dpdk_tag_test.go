//go:build dpdk

package cli

const dpdkBuilt = true
