{{- /*
  USB autosuspend powers idle devices down; a device passed through to a VM
  then disappears from the guest. Keep USB devices awake on these nodes.
*/ -}}
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-{{ .Params.role }}-kubevirt-usb
  labels:
    machineconfiguration.openshift.io/role: {{ .Params.role }}
spec:
  kernelArguments:
    - usbcore.autosuspend=-1
