{{- /* Console troubleshooting panel; the name is fixed by the CRD for this type. */ -}}
apiVersion: observability.openshift.io/v1alpha1
kind: UIPlugin
metadata:
  name: troubleshooting-panel
spec:
  type: TroubleshootingPanel
