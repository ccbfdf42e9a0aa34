import { Command, Option } from 'nest-commander';
import { JsonCommand } from '../../../platform/cli/json-command.js';
import { printResult, requireOption, type OutputOptions } from '../../../platform/cli/output.js';
import { Plans } from '../plans.js';

@Command({ name: 'plans:upsert', description: 'Map a price lookup_key to an entitlement type and a quantity per unit (a plan keeps its type)' })
export class UpsertPlanCommand extends JsonCommand {
  constructor(private readonly plans: Plans) {
    super();
  }

  async run(_: string[], options: OutputOptions & { lookupKey: string; type: string; quantity: string }): Promise<void> {
    const plan = await this.plans.upsert(requireOption(options, 'lookupKey'), requireOption(options, 'type'), Number(requireOption(options, 'quantity')));
    printResult(options, plan, `plan ${plan.lookup_key}: ${plan.quantity} ${plan.type} per unit`);
  }

  @Option({ flags: '--lookup-key <key>', description: "the price's lookup_key at the billing provider" })
  parseLookupKey(value: string): string {
    return value;
  }

  @Option({ flags: '--type <type>', description: 'sms_segments or call_minutes' })
  parseType(value: string): string {
    return value;
  }

  @Option({ flags: '--quantity <n>', description: 'units granted per unit bought' })
  parseQuantity(value: string): string {
    return value;
  }
}

@Command({ name: 'plans:list', description: 'The plans: which price lookup_key grants which entitlement type and quantity per unit' })
export class ListPlansCommand extends JsonCommand {
  constructor(private readonly plans: Plans) {
    super();
  }

  async run(_: string[], options: OutputOptions): Promise<void> {
    const plans = await this.plans.list();
    const human = plans.length === 0 ? 'no plans yet (plans:upsert adds one)' : plans.map((p) => `${p.lookup_key}  ${p.quantity} ${p.type} per unit`).join('\n');
    printResult(options, { data: plans }, human);
  }
}
