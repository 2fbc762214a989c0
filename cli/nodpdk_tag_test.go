//go:build !dpdk

package cli

const dpdkBuilt = false
