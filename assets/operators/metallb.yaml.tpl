{{- /*
  The MetalLB instance; its presence makes the operator deploy the speakers
  and controller. Address pools are the admin's: they depend on the network.
*/ -}}
apiVersion: metallb.io/v1beta1
kind: MetalLB
metadata:
  name: metallb
  namespace: metallb-system
spec:
  logLevel: info
