{{- /*
  IOMMU for PCI passthrough: on for each CPU vendor seen on the nodes
  (intel_iommu, amd_iommu), in passthrough mode so host devices keep native
  DMA performance. Intel is assumed when no vendor is detected.
*/ -}}
{{- $vendors := .Hardware.CPUVendors | default (list "Intel") -}}
{{- /* A vendor's IOMMU argument, once written, stays while the object
  lives: one node's labels (a kubelet may set feature.node.kubernetes.io/
  labels on its own Node) can add a vendor to a mixed pool, never take one
  away again and roll the pool a second time. Each vendor's kernel ignores
  the other's argument. A person who deletes the object has it rendered
  from the facts alone. */ -}}
{{- with .Live }}{{ range (dig "spec" "kernelArguments" list .) }}{{ if eq (toString .) "intel_iommu=on" }}{{ $vendors = append $vendors "Intel" }}{{ end }}{{ if eq (toString .) "amd_iommu=on" }}{{ $vendors = append $vendors "AMD" }}{{ end }}{{ end }}{{ end -}}
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
