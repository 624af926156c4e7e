package clusterset

import clog "github.com/coredns/coredns/plugin/pkg/log"

// pluginName names the plugin in the Corefile, its log lines and its
// metrics.
const pluginName = "clusterset"

// log is the plugin's logger, its lines marked as the clusterset plugin's.
var log = clog.NewWithPlugin(pluginName)
