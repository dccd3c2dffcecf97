import { PageSection, Title } from '@patternfly/react-core';
import AutopilotView from './AutopilotView';

// The page under Virtualization (console.page/route).
const AutopilotPage = () => (
  <>
    <PageSection>
      <Title headingLevel="h1">Virtualization platform autopilot</Title>
    </PageSection>
    <PageSection>
      <AutopilotView />
    </PageSection>
  </>
);

export default AutopilotPage;
