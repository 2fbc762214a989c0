package controller

// TopologySource names a Topology resource's text in messages and in the
// part specifications (cluster.Spec.Source). Its author is not the
// controller's operator: a file name it gives (a link's trace or schedule,
// a VM's image, kernel or hostfs) is refused, naming the field, before any
// file of the controller or of a worker pod is touched, so that no status
// message can carry a file's content or say whether it exists.
const TopologySource = "a Topology resource"
