import { Command } from 'nest-commander';
import { JsonCommand } from '../../../platform/cli/json-command.js';
import { printResult, type OutputOptions } from '../../../platform/cli/output.js';
import { EndpointsService } from '../endpoints.service.js';

@Command({ name: 'endpoints:enable', arguments: '<id>', description: 'Re-enable a webhook endpoint and resume its parked deliveries' })
export class EnableEndpointCommand extends JsonCommand {
  constructor(private readonly endpoints: EndpointsService) {
    super();
  }

  async run([id]: string[], options: OutputOptions): Promise<void> {
    const endpoint = await this.endpoints.enable(undefined, id);
    printResult(options, { endpoint }, `endpoint ${id} enabled; ${endpoint.resumed_deliveries} parked deliveries resumed`);
  }
}
