import { Injectable } from '@nestjs/common';
import type { CarrierName } from './carrier-name.js';
import type { NumberProvider } from './number-provider.js';

/** The numbers API of each carrier (made by CarriersModule from its list of carriers). */
@Injectable()
export class NumberProviders {
  constructor(private readonly byCarrier: Record<CarrierName, NumberProvider>) {}

  for(carrier: CarrierName): NumberProvider {
    return this.byCarrier[carrier];
  }
}

