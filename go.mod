module github.com/hymn-net/hymn

go 1.26.0

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/chromedp/chromedp v0.23.1
	github.com/creack/pty v1.1.24
	github.com/digitalocean/go-qemu v0.0.0-20250212194115-ee9b0668d242
	github.com/evanw/esbuild v0.28.2
	github.com/gopacket/gopacket v1.7.7
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)

require (
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/digitalocean/go-libvirt v0.0.0-20220804181439-8648fbde413e // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	golang.org/x/net v0.55.0 // indirect
)
