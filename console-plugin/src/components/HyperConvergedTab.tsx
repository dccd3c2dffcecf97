import { PageSection } from '@patternfly/react-core';
import AutopilotView from './AutopilotView';

// The Autopilot tab of the HyperConverged's page (console.tab/horizontalNav).
const HyperConvergedTab = () => (
  <PageSection>
    <AutopilotView />
  </PageSection>
);

export default HyperConvergedTab;
