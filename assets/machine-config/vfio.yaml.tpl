{{- /*
  Binds the PCI devices the HCO permits for passthrough (those not served by
  an external device plugin) to vfio-pci at boot, before any host driver
  claims them. Without permitted devices only the IOMMU arguments remain.
*/ -}}
{{- $ids := list -}}
{{- range (dig "spec" "virtualization" "permittedHostDevices" "pciHostDevices" list .HCO) -}}
{{- if and (not (dig "externalResourceProvider" false .)) (not (dig "disabled" false .)) -}}
{{- /* Checked: each id becomes part of a kernel argument. */ -}}
{{- $ids = append $ids (pciID "HCO spec.virtualization.permittedHostDevices.pciHostDevices pciDeviceSelector" .pciDeviceSelector) -}}
{{- end -}}
{{- end -}}
{{- $ids = $ids | uniq | sortAlpha -}}
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
  name: 50-{{ .Params.role }}-kubevirt-vfio
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
{{- if $ids }}
    - {{ printf "vfio-pci.ids=%s" (join "," $ids) | quote }}
    - rd.driver.pre=vfio-pci
{{- end }}
