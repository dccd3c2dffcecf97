{{- /*
  PSI kernel argument. The name must sort after 98-: a MachineConfig whose
  name starts with 98- turns PSI off again on OpenShift.
*/ -}}
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-{{ .Params.role }}-kubevirt-psi-karg
  labels:
    machineconfiguration.openshift.io/role: {{ .Params.role }}
spec:
  kernelArguments:
    - psi=1
