import { Injectable, type OnModuleInit } from '@nestjs/common';
import { InjectCommander } from 'nest-commander';

/** Help and usage lines name the CLI `onceline` (commander would take the script's file name, `cli`). */
@Injectable()
export class ProgramName implements OnModuleInit {
  constructor(@InjectCommander() private readonly program: { name(name: string): unknown }) {}

  onModuleInit(): void {
    this.program.name('onceline');
  }
}
