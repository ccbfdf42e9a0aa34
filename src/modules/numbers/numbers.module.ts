import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module.js';
import { PhoneNumbersController } from './phone-numbers.controller.js';
import { PhoneNumbers } from './phone-numbers.service.js';

/** Phone numbers: ownership (one account per number) and the carrier each sends through. */
@Module({ imports: [AccountsModule], controllers: [PhoneNumbersController], providers: [PhoneNumbers], exports: [PhoneNumbers] })
export class NumbersModule {}
