{{- /*
  IOMMU for PCI passthrough: on for each CPU vendor seen on the nodes
  (intel_iommu, amd_iommu), in passthrough mode so host devices keep native
  DMA performance. Intel is assumed when no vendor is detected.
*/ -}}
{{- $vendors := .Hardware.CPUVendors | default (list "Intel") -}}
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-{{ .Params.role }}-kubevirt-iommu
  labels:
    machineconfiguration.openshift.io/role: {{ .Params.role }}
spec:
  kernelArguments:
{{- if has "Intel" $vendors }}
    - intel_iommu=on
{{- end }}
{{- if has "AMD" $vendors }}
    - amd_iommu=on
{{- end }}
    - iommu=pt
