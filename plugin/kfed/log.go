package kfed

import clog "github.com/coredns/coredns/plugin/pkg/log"

// log is the plugin's logger, its lines marked as the kfed plugin's.
var log = clog.NewWithPlugin("kfed")
